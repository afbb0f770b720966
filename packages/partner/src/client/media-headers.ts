/** What the headers of an audio link's answer say, as a download needs them. */
import { EarshotResponseError } from './errors.js'

/** `Content-Range: bytes N-M/TOTAL` of a 206; undefined when absent or of another form. */
export function contentRangeOf(headers: Headers): { start: number; end: number; total: number } | undefined {
  const match = /^bytes (\d{1,15})-(\d{1,15})\/(\d{1,15})$/.exec(headers.get('content-range')?.trim() ?? '')
  if (!match) return undefined
  const [start, end, total] = match.slice(1).map(Number) as [number, number, number]
  return start <= end && end < total ? { start, end, total } : undefined
}

export function contentLengthOf(headers: Headers): number | undefined {
  const value = headers.get('content-length')?.trim()
  return value !== undefined && /^\d{1,15}$/.test(value) ? Number(value) : undefined
}

/** The media type without its parameters, lower case; application/octet-stream when not stated. */
export function contentTypeOf(headers: Headers): string {
  const type = headers.get('content-type')?.split(';', 1)[0]?.trim().toLowerCase()
  return type || 'application/octet-stream'
}

/** A strong ETag, the only kind If-Range may carry; undefined for none or a weak one (W/"…"). */
export function strongEtagOf(headers: Headers): string | undefined {
  const etag = headers.get('etag')?.trim()
  return etag !== undefined && /^"[\x21\x23-\x7e]*"$/.test(etag) ? etag : undefined
}

/**
 * The SHA-256 of the whole file that `Repr-Digest` (RFC 9530) states, on a 206 as on a 200; undefined
 * when the header states none. A sha-256 that is not 32 bytes of Base64 is refused, never ignored.
 */
export function reprDigestOf(response: Response): Buffer | undefined {
  const header = response.headers.get('repr-digest')
  if (header === null) return undefined
  const member = header
    .split(',')
    .map((each) => /^\s*sha-256\s*=\s*:([^:]*):\s*$/i.exec(each))
    .find((match) => match !== null)
  if (!member) return undefined
  const encoded = member[1] as string
  const digest = Buffer.from(encoded, 'base64')
  if (digest.length !== 32 || digest.toString('base64') !== encoded) {
    throw new EarshotResponseError(
      `the audio link's Repr-Digest states a malformed sha-256: ${encoded}`,
      response.status,
    )
  }
  return digest
}
