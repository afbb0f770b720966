import { ResponseCode, type ResponseCodeValue } from './error-catalogue.js'

/**
 * Base of every error the protocol package throws. `code` is a stable string to branch on;
 * `responseCode` is the catalogue code the platform answers with when the error reaches a client.
 */
export abstract class ProtocolError extends Error {
  abstract readonly code: string
  abstract readonly responseCode: ResponseCodeValue

  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = new.target.name
  }
}

/** A secret that is neither 44-character standard Base64 of 32 bytes nor exactly 32 UTF-8 bytes. */
export class InvalidSecretError extends ProtocolError {
  readonly code = 'invalid_secret'
  readonly responseCode = ResponseCode.INTERNAL_ERROR
}

/** The envelope itself is malformed: a field is missing, of the wrong type or not canonical. */
export class InvalidEnvelopeError extends ProtocolError {
  readonly code = 'invalid_envelope'
  readonly responseCode = ResponseCode.INVALID_REQUEST
}

/**
 * Authentication failed, the key is wrong, or no key is known for the keyVersion. The message is the
 * same for all of them so that a caller learns nothing about which.
 */
export class DecryptionFailedError extends ProtocolError {
  readonly code = 'decryption_failed'
  readonly responseCode = ResponseCode.DECRYPTION_FAILED

  constructor(options?: ErrorOptions) {
    super('the envelope could not be decrypted', options)
  }
}

/** The envelope is authentic but its plaintext is not UTF-8 JSON holding an object. */
export class InvalidPlaintextError extends ProtocolError {
  readonly code = 'invalid_plaintext'
  readonly responseCode = ResponseCode.INVALID_REQUEST
}

/** A plaintext field breaks its rule; `field` names it (a JSON pointer without the leading slash). */
export class InvalidParameterError extends ProtocolError {
  readonly code = 'invalid_parameter'
  readonly responseCode = ResponseCode.INVALID_PARAMETER

  constructor(
    readonly field: string,
    rule: string,
  ) {
    super(field ? `${field}: ${rule}` : rule)
  }
}
