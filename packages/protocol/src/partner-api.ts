import type { TSchema } from 'typebox'
import {
  AccessTokenSchema,
  CallbackPlaintextSchema,
  ChangeKind,
  ChangePageSchema,
  ChangesRequestSchema,
  EnvelopeSchema,
  PushEventType,
  RecordingFilterSchema,
  RecordingListSchema,
  TokenPlaintextSchema,
  TokenRequestSchema,
} from './messages.js'
import {
  confirmReceiptContract,
  fetchAudioContract,
  issueTokenContract,
  queryRecordingsContract,
  readChangesContract,
} from './partner-contracts.js'

/*
 * The partner API's vocabulary besides the messages: its operations, the headers of a push, and the
 * limits the protocol fixes. The platform serves these operations, the kits call them, and
 * contract.ts writes all of it to test-data/contract.json for the kits in other languages.
 */

/** Every event type a push may carry, in the order the API lists them: add one here, nowhere else in TypeScript. */
export const EVENT_TYPES: readonly PushEventTypeValue[] = Object.values(PushEventType)
export type PushEventTypeValue = (typeof PushEventType)[keyof typeof PushEventType]

/** Every kind of change the change feed reports. */
export const CHANGE_KINDS: readonly ChangeKind[] = Object.values(ChangeKind)

/**
 * How a caller proves who it is: `secret` seals the request with the enterprise's key, `bearer` adds a
 * token to a sealed request, `link` is a signed media link that is its own credential.
 */
export type PartnerCredentials = 'secret' | 'bearer' | 'link'

export interface PartnerOperationSpec {
  readonly method: 'GET' | 'POST'
  readonly path: string
  readonly credentials: PartnerCredentials
  /** The request body's schema when it is not an envelope alone. */
  readonly body?: TSchema
  /** What the request's envelope holds. */
  readonly plaintext?: TSchema
  /** What the answer's `data` holds (sealed in an envelope when `sealedAnswer`); none when absent. */
  readonly answer?: TSchema
  readonly sealedAnswer?: boolean
}

/**
 * The partner API's operations by operationId: each route's method and path from its contract
 * (partner-contracts.ts), with how a caller authenticates and what its envelopes hold.
 */
export const PartnerOperation = {
  issueToken: {
    method: issueTokenContract.method,
    path: issueTokenContract.path,
    credentials: 'secret',
    body: TokenRequestSchema,
    plaintext: TokenPlaintextSchema,
    answer: AccessTokenSchema,
    sealedAnswer: false,
  },
  queryRecordings: {
    method: queryRecordingsContract.method,
    path: queryRecordingsContract.path,
    credentials: 'bearer',
    body: EnvelopeSchema,
    plaintext: RecordingFilterSchema,
    answer: RecordingListSchema,
    sealedAnswer: true,
  },
  readChanges: {
    method: readChangesContract.method,
    path: readChangesContract.path,
    credentials: 'bearer',
    body: EnvelopeSchema,
    plaintext: ChangesRequestSchema,
    answer: ChangePageSchema,
    sealedAnswer: true,
  },
  confirmReceipt: {
    method: confirmReceiptContract.method,
    path: confirmReceiptContract.path,
    credentials: 'bearer',
    body: EnvelopeSchema,
    plaintext: CallbackPlaintextSchema,
  },
  fetchAudio: { method: fetchAudioContract.method, path: fetchAudioContract.path, credentials: 'link' },
} as const satisfies Record<string, PartnerOperationSpec>
export type PartnerOperationId = keyof typeof PartnerOperation

/** The header naming a push's eventId, beside the envelope that holds it. */
export const PUSH_EVENT_ID_HEADER = 'x-earshot-event-id'

/** How far ahead of the platform's clock a request's issuedAt may be, for clients whose clock runs fast. */
export const ISSUED_AT_MAX_AHEAD_SECONDS = 60

/** The longest part of a request path (a media link, an audioId): longer is refused with 4140. */
export const MAX_PATH_PARAMETER_LENGTH = 1024

/** A partner request's largest body, in bytes (EARSHOT_BODY_LIMIT): its default, and the most it may be set to. */
export const PARTNER_BODY_LIMIT = { defaultBytes: 64 * 1024, maxBytes: 16 * 1024 * 1024 } as const
