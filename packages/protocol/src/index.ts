export { decodeCanonicalBase64 } from './base64.js'
export {
  COMPONENT,
  type ComponentNote,
  component,
  componentOf,
  PLAINTEXT_EXTENSION,
  SEALED_EXTENSION,
} from './component.js'
export { CONTRACT_COMMAND, CONTRACT_MESSAGES, contractText, partnerContract } from './contract.js'
export * from './endpoint-messages.js'
export {
  ALG,
  type Envelope,
  isJsonObject,
  type JsonObject,
  type KeyResolver,
  MAX_EVENT_ID_LENGTH,
  MAX_KEY_VERSION,
  NONCE_BYTES,
  type OpenedEnvelope,
  open,
  parseEnvelope,
  type SealOptions,
  SPEC_VERSION,
  seal,
  TAG_BYTES,
} from './envelope.js'
export {
  type CatalogueEntry,
  catalogueEntry,
  errorCatalogue,
  httpStatusOf,
  isResponseCode,
  ResponseCode,
  type ResponseCodeName,
  type ResponseCodeValue,
} from './error-catalogue.js'
export {
  DecryptionFailedError,
  InvalidEnvelopeError,
  InvalidParameterError,
  InvalidPlaintextError,
  InvalidSecretError,
  ProtocolError,
} from './errors.js'
export * from './event-type-names.js'
export { type EnvelopeKey, generateSecret, KEY_BYTES, loadKey, SECRET_RULE } from './key.js'
export * from './message-parser.js'
export * from './messages.js'
export {
  CHANGE_KINDS,
  CHECK_AUDIO_ID_PREFIX,
  CHECK_HEADER,
  isCheckPush,
  type PartnerCredentials,
  PartnerOperation,
  type PartnerOperationId,
  type PartnerOperationSpec,
  PUSH_EVENT_ID_HEADER,
  type SealedOperation,
  type SealedOperationId,
  type SealedPlaintextOf,
  type SealedResultOf,
  sealedOperation,
} from './partner-api.js'
export * from './partner-contracts.js'
export {
  ISSUED_AT_MAX_AHEAD_SECONDS,
  MAX_PATH_PARAMETER_LENGTH,
  PARTNER_BODY_LIMIT,
} from './partner-limits.js'
export { pooledRandomBytes, randomBytes } from './random-pool.js'
export { type DescribedCheckReport, describeCheckReport } from './receiver-check-report.js'
export * from './route-contract.js'
export * from './self-service-contracts.js'
export * from './self-service-messages.js'
export {
  ISO_INSTANT_PATTERN,
  ISO_INSTANT_RULE,
  MAX_FRACTION_DIGITS,
  parseInstant,
  parseInstantMicros,
} from './time.js'
export {
  parseTranscriptSentences,
  serializeTranscriptSentences,
  type TranscriptSentence,
  TranscriptSentenceSchema,
} from './transcript.js'
