/**
 * The credentials of an `Authorization: Bearer <credentials>` header, or undefined: the scheme is matched
 * in any case and may be followed by several spaces (RFC 9110 §11.1, §11.4).
 */
export function bearerCredentials(authorization: string | undefined): string | undefined {
  return /^bearer +(\S.*)$/i.exec(authorization ?? '')?.[1]
}
