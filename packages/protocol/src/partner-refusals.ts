import { ResponseCode, type ResponseCodeValue } from './error-catalogue.js'

/** What a request with a token may be refused with, whatever its route. */
export const BEARER_REFUSALS: readonly ResponseCodeValue[] = [
  ResponseCode.INVALID_REQUEST,
  ResponseCode.INVALID_PARAMETER,
  ResponseCode.UNAUTHORIZED,
  ResponseCode.TOKEN_EXPIRED,
  ResponseCode.DECRYPTION_FAILED,
  ResponseCode.FORBIDDEN,
  ResponseCode.REQUEST_TIMEOUT,
  ResponseCode.REPLAYED,
  ResponseCode.PAYLOAD_TOO_LARGE,
  ResponseCode.UNSUPPORTED_MEDIA_TYPE,
  ResponseCode.RATE_LIMITED,
  ResponseCode.INTERNAL_ERROR,
  ResponseCode.UNAVAILABLE,
]
