import {
  component,
  InvalidParameterError,
  messageParser,
  NO_NUL_PATTERN,
  ResponseCode,
  RULE,
  routeContract,
  UNKNOWN_FIELD_RULE,
} from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { ActorSchema } from '../audit/audit-contract.js'
import { WITH_BODY, WITH_ID } from '../http/admin-refusals.js'
import { type Holds, Id, NullableTime, type Same, Time } from '../http/answer-fields.js'
import { MAX_DEVICE_UID_LENGTH } from '../recordings/recording-input.js'
import type { ErasureDetail, ErasureSummary } from './erasure-store.js'

/*
 * Erasure requests: every recording of a device (or the audioIds given) deleted and pushed as deleted,
 * its audio and every copy of its content removed; listed, shown with each endpoint's progress, and
 * reported in a signed record. The key that verifies reports is public, on the partner listener.
 */

const MAX_ERASURE_AUDIO_IDS = 1000
const MAX_REASON_LENGTH = 500

const NewErasureSchema = Type.Object(
  {
    deviceUid: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: MAX_DEVICE_UID_LENGTH,
        pattern: NO_NUL_PATTERN,
        description:
          'erase every recording of this device (it is never stored: the erasure keeps its subjectHash)',
        [RULE]: `must be a string of 1 to ${MAX_DEVICE_UID_LENGTH} characters, without U+0000`,
      }),
    ),
    audioIds: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200, pattern: NO_NUL_PATTERN }), {
        minItems: 1,
        maxItems: MAX_ERASURE_AUDIO_IDS,
        description: 'erase these recordings (deleted ones too: their kept copies are scrubbed)',
        [RULE]: `must be a list of 1 to ${MAX_ERASURE_AUDIO_IDS} audioIds`,
      }),
    ),
    reason: Type.Optional(
      Type.String({
        maxLength: MAX_REASON_LENGTH,
        pattern: NO_NUL_PATTERN,
        description: 'why, for the record (a ticket number); never put the person’s data here',
        [RULE]: `must be a string of at most ${MAX_REASON_LENGTH} characters`,
      }),
    ),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field of an erasure request; give deviceUid or audioIds, and reason',
    ...component({ name: 'NewErasure', description: 'What to erase: a device’s recordings, or audioIds.' }),
  },
)
export const NewErasure = messageParser(NewErasureSchema, (request) => {
  if ((request.deviceUid === undefined) === (request.audioIds === undefined)) {
    throw new InvalidParameterError('', 'give exactly one of deviceUid and audioIds')
  }
})

const ErasureSummarySchema = Type.Object(
  {
    erasureId: Id('the erasure'),
    enterpriseId: Id('its enterprise'),
    kind: Type.Enum(['device', 'audio', 'retention'], {
      description: "a device's recordings, audioIds, or the platform's retention policy",
    }),
    subjectHash: Type.Union([Type.String(), Type.Null()], {
      description:
        'for a device: the SHA-256 (hex) of "enterpriseId:deviceUid"; the deviceUid itself is never kept',
    }),
    reason: Type.String(),
    requestedBy: ActorSchema,
    requestedAt: Time('when it was requested'),
    state: Type.Enum(['running', 'complete', 'confirmed'], {
      description:
        'complete: every recording deleted, its audio and copies gone, every deletion acknowledged by every endpoint; confirmed: every partner that had a recording also confirmed erasing it',
    }),
    recordings: Type.Integer({
      minimum: 0,
      description: 'recordings it covers (a retention run: found so far)',
    }),
    deletedAt: NullableTime('when the last recording was deleted'),
    completedAt: NullableTime('when it turned complete'),
    confirmedAt: NullableTime('when it turned confirmed'),
  },
  component({ name: 'ErasureSummary', description: 'An erasure request.' }),
)

const EndpointProgressSchema = Type.Object({
  endpointId: Id('the endpoint'),
  deletions: Type.Integer({ minimum: 0, description: 'recording.deleted pushes to it' }),
  acknowledged: Type.Integer({ minimum: 0, description: 'of those, answered with an ack' }),
  confirmed: Type.Integer({ minimum: 0, description: 'of those, confirmed erased by the partner' }),
})

const ErasureDetailSchema = Type.Object(
  { ...ErasureSummarySchema.properties, endpoints: Type.Array(EndpointProgressSchema) },
  component({ name: 'Erasure', description: 'An erasure with its progress per endpoint.' }),
)

const ErasureParams = Type.Object({ erasureId: Type.Integer({ minimum: 1, description: 'the erasure' }) })

export const createErasureContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/erasures',
  operationId: 'createErasure',
  tag: 'erasures',
  summary: "Erase a device's recordings, or recordings by audioId, everywhere the platform keeps them",
  description:
    'Each recording is deleted as a deletion does (pushed as recording.deleted to every subscribed endpoint, in order), its stored audio removed, and the receivers’ answers kept from its pushes dropped, in the background, batch by batch. 4040 names audioIds the enterprise never had.',
  params: Type.Object({ enterpriseId: Type.Integer({ minimum: 1, description: 'the enterprise' }) }),
  body: { json: NewErasureSchema },
  answer: {
    status: 201,
    description: 'Requested',
    payload: {
      json: Type.Object({ erasureId: Id('the erasure'), recordings: Type.Integer({ minimum: 0 }) }),
    },
  },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'erasures.write',
})

export const listErasuresContract = routeContract({
  method: 'GET',
  path: '/admin/v1/erasures',
  operationId: 'listErasures',
  tag: 'erasures',
  summary: 'List erasures, newest first (at most 500); retention runs among them',
  query: Type.Object({
    enterpriseId: Type.Optional(
      Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: "one enterprise's erasures only" }),
    ),
  }),
  answer: {
    description: 'The erasures',
    payload: { json: Type.Object({ erasures: Type.Array(ErasureSummarySchema) }) },
  },
  refusals: [ResponseCode.INVALID_PARAMETER],
  permission: 'erasures.read',
})

export const showErasureContract = routeContract({
  method: 'GET',
  path: '/admin/v1/erasures/:erasureId',
  operationId: 'showErasure',
  tag: 'erasures',
  summary: 'An erasure and its progress per endpoint',
  params: ErasureParams,
  answer: { description: 'The erasure', payload: { json: ErasureDetailSchema } },
  refusals: WITH_ID,
  permission: 'erasures.read',
})

export const ErasureReportSchema = Type.Object(
  {
    report: Type.Object(
      {
        format: Type.Literal('earshot-erasure-report/1'),
        issuedAt: Time('when this report was signed'),
        keyId: Type.String({ description: 'the kid of the key at /.well-known/earshot-erasure-key' }),
        ...ErasureDetailSchema.properties,
        recordedBefore: NullableTime('a retention run: it erased what was recorded before this'),
        audioIds: Type.Array(Type.String(), { description: 'the recordings it erased, sorted' }),
      },
      { description: 'What was erased and how far it went' },
    ),
    signature: Type.String({
      description: 'base64url Ed25519 signature over the RFC 8785 canonical JSON of report',
    }),
  },
  component({
    name: 'ErasureReport',
    description: 'A signed record of an erasure, for a data-protection file.',
  }),
)

export const erasureReportContract = routeContract({
  method: 'GET',
  path: '/admin/v1/erasures/:erasureId/report',
  operationId: 'erasureReport',
  tag: 'erasures',
  summary: 'A signed report of an erasure, verifiable with the key at /.well-known/earshot-erasure-key',
  params: ErasureParams,
  answer: { description: 'The report and its signature', payload: { json: ErasureReportSchema } },
  refusals: WITH_ID,
  permission: 'erasures.read',
})

export const erasureKeyContract = routeContract({
  method: 'GET',
  path: '/.well-known/earshot-erasure-key',
  operationId: 'erasureKey',
  tag: 'erasures',
  summary: 'The public key (JWK, OKP Ed25519) that verifies erasure reports',
  open: true,
  answer: {
    description: 'The key',
    payload: {
      json: Type.Object({
        kty: Type.Literal('OKP'),
        crv: Type.Literal('Ed25519'),
        x: Type.String(),
        kid: Type.String(),
        alg: Type.Literal('EdDSA'),
        use: Type.Literal('sig'),
      }),
    },
  },
  refusals: [],
})

export const erasureAdminContracts = [
  createErasureContract,
  listErasuresContract,
  showErasureContract,
  erasureReportContract,
] as const

/** Compiles only while the schemas describe exactly the rows the store answers. */
export type SchemasDescribeTheirRows = [
  Holds<Same<Static<typeof ErasureSummarySchema>, ErasureSummary>>,
  Holds<Same<Static<typeof ErasureDetailSchema>, ErasureDetail>>,
]
