import { ResponseCode, type ResponseCodeValue } from '@earshot/protocol'

const {
  INVALID_REQUEST,
  INVALID_PARAMETER,
  NOT_FOUND,
  PAYLOAD_TOO_LARGE,
  REQUEST_TIMEOUT,
  UNSUPPORTED_MEDIA_TYPE,
} = ResponseCode
/** What a route with a body may be refused with for its body alone (4080: it arrived too slowly). */
export const WITH_BODY: readonly ResponseCodeValue[] = [
  INVALID_REQUEST,
  INVALID_PARAMETER,
  REQUEST_TIMEOUT,
  PAYLOAD_TOO_LARGE,
  UNSUPPORTED_MEDIA_TYPE,
]
/** What a route naming a resource by id may be refused with: not an id, or no such resource. */
export const WITH_ID: readonly ResponseCodeValue[] = [INVALID_PARAMETER, NOT_FOUND]
