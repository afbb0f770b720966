import type { TSchema } from 'typebox'
import { componentOf } from './component.js'
import {
  ALG,
  MAX_EVENT_ID_LENGTH,
  MAX_KEY_VERSION,
  NONCE_BYTES,
  SPEC_VERSION,
  TAG_BYTES,
} from './envelope.js'
import { errorCatalogue } from './error-catalogue.js'
import { EVENT_TYPES } from './event-type-names.js'
import { KEY_BYTES } from './key.js'
import {
  AccessTokenSchema,
  CallbackPlaintextSchema,
  ChangePageSchema,
  ChangesRequestSchema,
  DEFAULT_PAGE_SIZE,
  EnvelopeSchema,
  MAX_ENTERPRISE_ID,
  MAX_ISSUED_AT,
  MAX_PAGE,
  MAX_PAGE_SIZE,
  PushEventSchema,
  RecordingDataSchema,
  RecordingFilterSchema,
  RecordingListSchema,
  ResponseBodySchema,
  TokenPlaintextSchema,
  TokenRequestSchema,
} from './messages.js'
import {
  CHANGE_KINDS,
  CHECK_AUDIO_ID_PREFIX,
  CHECK_HEADER,
  PartnerOperation,
  type PartnerOperationSpec,
  PUSH_EVENT_ID_HEADER,
} from './partner-api.js'
import {
  ISSUED_AT_MAX_AHEAD_SECONDS,
  MAX_PATH_PARAMETER_LENGTH,
  PARTNER_BODY_LIMIT,
} from './partner-limits.js'
import { selfServiceContracts } from './self-service-contracts.js'
import { MAX_FRACTION_DIGITS } from './time.js'
import { TranscriptSentenceSchema } from './transcript.js'

/*
 * The partner API's vocabulary as one JSON document, test-data/contract.json, for the kits written in
 * other languages: their suites compare their constants with it, so that an event type, a code or an
 * operation added here fails them until they learn it.
 */

/** The command that writes the file again from this code. */
export const CONTRACT_COMMAND = 'npm run contract'

/** Every message of the protocol by the name the contract gives it. */
export const CONTRACT_MESSAGES: Readonly<Record<string, TSchema>> = {
  Envelope: EnvelopeSchema,
  TokenRequest: TokenRequestSchema,
  TokenPlaintext: TokenPlaintextSchema,
  AccessToken: AccessTokenSchema,
  RecordingFilter: RecordingFilterSchema,
  RecordingData: RecordingDataSchema,
  TranscriptSentence: TranscriptSentenceSchema,
  RecordingList: RecordingListSchema,
  CallbackPlaintext: CallbackPlaintextSchema,
  ChangesRequest: ChangesRequestSchema,
  ChangePage: ChangePageSchema,
  PushEvent: PushEventSchema,
  ResponseBody: ResponseBodySchema,
  ...Object.fromEntries(
    selfServiceContracts
      .flatMap((contract) => [contract.body.sealed, contract.answer.payload.result])
      .map((schema) => [componentOf(schema)?.name, schema]),
  ),
}

const ABOUT =
  `The partner API's vocabulary, generated from packages/protocol/src by \`${CONTRACT_COMMAND}\`: do not ` +
  'edit it by hand. operations name their messages by their key in messages (JSON Schema); header ' +
  'names are case-insensitive on the wire; docs/protocol.md explains every part.'

/** The contract as a JSON value. */
export function partnerContract() {
  return {
    about: ABOUT,
    specVersion: SPEC_VERSION,
    envelope: { alg: ALG, keyBytes: KEY_BYTES, nonceBytes: NONCE_BYTES, tagBytes: TAG_BYTES },
    operations: Object.fromEntries(
      Object.entries(PartnerOperation).map(([id, operation]) => [id, describeOperation(operation)]),
    ),
    push: {
      eventIdHeader: PUSH_EVENT_ID_HEADER,
      check: { header: CHECK_HEADER, headerValue: '1', audioIdPrefix: CHECK_AUDIO_ID_PREFIX },
    },
    eventTypes: [...EVENT_TYPES],
    changeTypes: [...CHANGE_KINDS],
    codes: [...errorCatalogue.values()].map(({ code, name, httpStatus, defaultMessage, when }) => ({
      code,
      name,
      httpStatus,
      message: defaultMessage,
      when,
    })),
    limits: limits(),
    messages: Object.fromEntries(
      Object.entries(CONTRACT_MESSAGES).map(([name, schema]) => [name, JSON.parse(JSON.stringify(schema))]),
    ),
  }
}

/** The file's text: the contract as indented JSON and a final newline. */
export function contractText(): string {
  return `${JSON.stringify(partnerContract(), null, 2)}\n`
}

function describeOperation(operation: PartnerOperationSpec) {
  const { method, path, credentials, body, plaintext, answer, sealedAnswer, atMostOnce } = operation
  return {
    method,
    path,
    credentials,
    atMostOnce,
    body: body ? messageName(body) : null,
    plaintext: plaintext ? messageName(plaintext) : null,
    answer: answer ? messageName(answer) : null,
    sealedAnswer: sealedAnswer ?? false,
  }
}

function messageName(schema: TSchema): string {
  const entry = Object.entries(CONTRACT_MESSAGES).find(([, each]) => each === schema)
  if (!entry) throw new Error('an operation names a schema that CONTRACT_MESSAGES does not hold')
  return entry[0]
}

/** The bounds the protocol fixes, some read from the schemas that state them. */
function limits() {
  const filter = RecordingFilterSchema.properties
  return {
    pageMax: MAX_PAGE,
    pageSizeMax: MAX_PAGE_SIZE,
    pageSizeDefault: DEFAULT_PAGE_SIZE,
    // ChangesRequest.parse asks for a full page when size is not given.
    changesPageSizeDefault: MAX_PAGE_SIZE,
    filterIdMaxLength: Math.min(maxLengthOf(filter.audioId), maxLengthOf(filter.deviceUid)),
    cursorMaxLength: maxLengthOf(ChangesRequestSchema.properties.cursor),
    enterpriseIdMax: MAX_ENTERPRISE_ID,
    keyVersionMax: MAX_KEY_VERSION,
    eventIdMaxLength: MAX_EVENT_ID_LENGTH,
    issuedAtMax: MAX_ISSUED_AT,
    issuedAtMaxAheadSeconds: ISSUED_AT_MAX_AHEAD_SECONDS,
    instantFractionDigitsMax: MAX_FRACTION_DIGITS,
    pathParameterMaxLength: MAX_PATH_PARAMETER_LENGTH,
    bodyBytesDefault: PARTNER_BODY_LIMIT.defaultBytes,
    bodyBytesMax: PARTNER_BODY_LIMIT.maxBytes,
  }
}

function maxLengthOf(schema: TSchema): number {
  const { maxLength } = schema as { maxLength?: unknown }
  if (typeof maxLength !== 'number') throw new Error('the schema has no maxLength')
  return maxLength
}
