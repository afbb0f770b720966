import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import { ApiError } from '../http/api-error.js'

/** One line of a streamed body, numbered from 1, as raw bytes without its LF (nor a CR before it). */
export interface BodyLine {
  number: number
  /** Undefined when the line is longer than the line limit: its bytes were not kept... */
  bytes: Buffer | undefined
  /** ...but its first HEAD_BYTES were (to tell what the line is, e.g. a whole JSON array on one line). */
  head?: Buffer
}

/** How much of a line over the limit is kept. */
export const HEAD_BYTES = 64

const LF = 0x0a
const CR = 0x0d

/** Passes the chunks of a body through, refusing it with 4130 once it grows past limitBytes. */
export async function* limitedBody(
  chunks: AsyncIterable<Buffer>,
  limitBytes: number,
): AsyncGenerator<Buffer, void, undefined> {
  let received = 0
  for await (const chunk of chunks) {
    received += chunk.length
    if (received > limitBytes) throw bodyTooLarge(limitBytes)
    yield chunk
  }
}

export function bodyTooLarge(limitBytes: number): ApiError {
  return new ApiError(ResponseCode.PAYLOAD_TOO_LARGE, `the body is over ${limitBytes} bytes`)
}

/**
 * Splits a stream into lines of raw bytes, holding at most one line (up to maxLineBytes) at a time:
 * the bytes of a longer line are dropped as they arrive and the line is yielded with bytes undefined.
 */
export async function* splitLines(
  chunks: AsyncIterable<Buffer>,
  maxLineBytes: number,
): AsyncGenerator<BodyLine, void, undefined> {
  let parts: Buffer[] = []
  let size = 0
  let head: Buffer | undefined
  let number = 0
  const append = (part: Buffer) => {
    if (head || part.length === 0) return
    size += part.length
    if (size > maxLineBytes) {
      head = firstBytes([...parts, part], HEAD_BYTES)
      parts = []
    } else {
      parts.push(part)
    }
  }
  const take = (): BodyLine => {
    const line: BodyLine = { number: ++number, bytes: undefined }
    if (head) line.head = head
    else {
      line.bytes = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size)
      if (line.bytes.at(-1) === CR) line.bytes = line.bytes.subarray(0, -1)
    }
    parts = []
    size = 0
    head = undefined
    return line
  }
  for await (const chunk of chunks) {
    let start = 0
    for (let end = chunk.indexOf(LF); end >= 0; end = chunk.indexOf(LF, start)) {
      append(chunk.subarray(start, end))
      yield take()
      start = end + 1
    }
    append(chunk.subarray(start))
  }
  if (size > 0 || head) yield take()
}

/** A copy of the first `count` bytes of parts (so that the parts themselves are not retained). */
function firstBytes(parts: Buffer[], count: number): Buffer {
  const kept: Buffer[] = []
  let size = 0
  for (const part of parts) {
    if (size >= count) break
    const piece = part.subarray(0, count - size)
    kept.push(piece)
    size += piece.length
  }
  return Buffer.concat(kept, size)
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Decodes a line strictly: invalid UTF-8 is refused, never replaced with U+FFFD. */
export function decodeUtf8Line(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes)
  } catch {
    throw new InvalidParameterError('', 'is not valid UTF-8')
  }
}
