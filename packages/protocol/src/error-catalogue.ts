/**
 * The one catalogue of response codes. The platform answers with these codes and the
 * partner kit interprets them; neither defines a code of its own.
 */
export const ResponseCode = {
  OK: 2000,
  INVALID_REQUEST: 4000,
  INVALID_PARAMETER: 4001,
  UNAUTHORIZED: 4010,
  TOKEN_EXPIRED: 4011,
  DECRYPTION_FAILED: 4012,
  FORBIDDEN: 4030,
  FORBIDDEN_BY_ROLE: 4031,
  NOT_FOUND: 4040,
  REQUEST_TIMEOUT: 4080,
  REPLAYED: 4090,
  PAYLOAD_TOO_LARGE: 4130,
  URI_TOO_LONG: 4140,
  UNSUPPORTED_MEDIA_TYPE: 4150,
  RATE_LIMITED: 4290,
  INTERNAL_ERROR: 5000,
  UNAVAILABLE: 5030,
} as const

export type ResponseCodeName = keyof typeof ResponseCode
export type ResponseCodeValue = (typeof ResponseCode)[ResponseCodeName]

export interface CatalogueEntry {
  readonly code: ResponseCodeValue
  readonly name: ResponseCodeName
  readonly httpStatus: number
  /** The message used when nothing more specific may be said. */
  readonly defaultMessage: string
  /** When the code is answered, for the API's documentation. */
  readonly when: string
}

/**
 * What the platform says whenever an envelope does not open: whatever failed (the secret, an unknown
 * enterprise or keyVersion, a retired key, an enterpriseId not matching the token), the same text, so
 * that it tells a caller what to check without telling an attacker which of them was wrong.
 */
export const DECRYPTION_FAILED_MESSAGE =
  'the envelope could not be decrypted: check the secret, the enterpriseId and the keyVersion ' +
  '(the keyVersion must be that of the secret, and the key must be current); ' +
  '`earshot enterprise rotate-key` gives the enterprise a new secret and keyVersion'

const defaultMessages: Record<ResponseCodeName, string> = {
  OK: 'success',
  INVALID_REQUEST: 'the request is not a valid envelope',
  INVALID_PARAMETER: 'a request field is invalid',
  UNAUTHORIZED: 'missing or invalid bearer token',
  TOKEN_EXPIRED: 'the access token has expired',
  DECRYPTION_FAILED: DECRYPTION_FAILED_MESSAGE,
  FORBIDDEN: 'the enterprise is disabled',
  FORBIDDEN_BY_ROLE: "the caller's role does not grant this",
  NOT_FOUND: 'no such recording',
  REQUEST_TIMEOUT: "the request did not arrive within the server's time limit; send it again without pausing",
  REPLAYED: 'this envelope nonce was already used',
  PAYLOAD_TOO_LARGE: 'the request body is over the size limit',
  URI_TOO_LONG: 'a part of the request path is over 1024 characters',
  UNSUPPORTED_MEDIA_TYPE: 'Content-Type must be application/json',
  RATE_LIMITED: 'rate limit exceeded; retry after the time in Retry-After',
  INTERNAL_ERROR: 'internal error',
  UNAVAILABLE: 'the service is unavailable; retry later',
}

const occasions: Record<ResponseCodeName, string> = {
  OK: 'success',
  INVALID_REQUEST: 'the body is not JSON, the envelope is malformed, or its plaintext is not a JSON object',
  INVALID_PARAMETER:
    'a field breaks its rule (size over 100, a bad time, an unknown field, a missing audioId, a malformed issuedAt or none where the enterprise requires it); msg names the field',
  UNAUTHORIZED: 'the bearer token is missing, malformed or unknown',
  TOKEN_EXPIRED:
    "the token's validity has passed, or the request's issuedAt is older than EARSHOT_REQUEST_MAX_AGE or over 60 s ahead of the platform's clock (msg says which, and by how much)",
  DECRYPTION_FAILED:
    'the envelope does not open: wrong key, unknown or retired keyVersion, unknown enterprise on the token request, or an enterpriseId not matching the token; one message for all',
  FORBIDDEN: 'the enterprise is disabled',
  FORBIDDEN_BY_ROLE:
    "never on the partner API's sealed routes: the admin API's refusal when the operator's role (or the API key's) does not grant the route's permission (msg names it), and the portal's when a view session asks for a change",
  NOT_FOUND: "the audioId (or another resource) is unknown to the caller's enterprise",
  REQUEST_TIMEOUT:
    "the request's headers or body did not arrive within the server's time limit (EARSHOT_REQUEST_TIMEOUT; EARSHOT_ADMIN_REQUEST_TIMEOUT on the admin API); the connection is closed",
  REPLAYED:
    'the envelope nonce was already accepted under the same enterprise and keyVersion; re-seal on retry',
  PAYLOAD_TOO_LARGE: 'the body is over the size limit',
  URI_TOO_LONG:
    'a path parameter (a media link, an audioId) is over 1024 characters, longer than any the platform gives',
  UNSUPPORTED_MEDIA_TYPE:
    'the Content-Type is not application/json (on an audio upload: not an allowed audio/<subtype>), or the body is compressed or not UTF-8',
  RATE_LIMITED: 'the per-enterprise rate limit is exceeded; Retry-After says when to retry',
  INTERNAL_ERROR: 'anything unexpected; no detail leaks',
  UNAVAILABLE: 'the instance is shutting down or overloaded; retry, on another instance',
}

/** HTTP status = code / 10, rounded down. */
export function httpStatusOf(code: number): number {
  return Math.floor(code / 10)
}

export const errorCatalogue: ReadonlyMap<ResponseCodeValue, CatalogueEntry> = new Map(
  (Object.entries(ResponseCode) as [ResponseCodeName, ResponseCodeValue][]).map(([name, code]) => [
    code,
    Object.freeze({
      code,
      name,
      httpStatus: httpStatusOf(code),
      defaultMessage: defaultMessages[name],
      when: occasions[name],
    }),
  ]),
)

export function isResponseCode(value: unknown): value is ResponseCodeValue {
  return typeof value === 'number' && errorCatalogue.has(value as ResponseCodeValue)
}

/** Looks up a code; throws on a code the catalogue does not define, since that is a programming error. */
export function catalogueEntry(code: ResponseCodeValue): CatalogueEntry {
  const entry = errorCatalogue.get(code)
  if (!entry) throw new RangeError(`response code ${code} is not in the error catalogue`)
  return entry
}
