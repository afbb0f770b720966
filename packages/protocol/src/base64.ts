/**
 * Decodes canonical standard Base64 (RFC 4648 §4: `+/` alphabet, padding required, no whitespace,
 * zero unused bits). Returns undefined for anything else.
 *
 * Node's decoder is lenient (it skips whitespace, accepts the URL-safe alphabet and missing padding),
 * so the decoded bytes are encoded again: only a canonical string survives the round trip unchanged.
 */
export function decodeCanonicalBase64(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64')
  return bytes.toString('base64') === text ? bytes : undefined
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
}
