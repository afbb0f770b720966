import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import { ApiError } from '../http/api-error.js'

/** One line of a streamed body, numbered from 1, as raw bytes without its LF (nor a CR before it). */
export interface BodyLine {
  number: number
  /** Undefined when the line is longer than the line limit: its bytes were not kept. */
  bytes: Buffer | undefined
}

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
  let tooLong = false
  let number = 0
  const append = (part: Buffer) => {
    if (tooLong || part.length === 0) return
    size += part.length
    if (size > maxLineBytes) {
      tooLong = true
      parts = []
    } else {
      parts.push(part)
    }
  }
  const take = (): BodyLine => {
    let bytes = tooLong ? undefined : parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size)
    if (bytes?.at(-1) === CR) bytes = bytes.subarray(0, -1)
    parts = []
    size = 0
    tooLong = false
    return { number: ++number, bytes }
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
  if (size > 0 || tooLong) yield take()
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
