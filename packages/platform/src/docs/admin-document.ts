import { ResponseCode, type ResponseCodeValue } from '@earshot/protocol'
import type { TSchema } from 'typebox'
import { NewEnterpriseSchema, PushUrlChangeSchema } from '../enterprises/enterprise-input.js'
import {
  DeliveryListQuerySchema,
  ReplayRangeSchema,
  UnreceiptedReplaySchema,
} from '../push/delivery-routes.js'
import { EndpointEnableSchema } from '../push/endpoint-routes.js'
import {
  RecordingInputSchema,
  RecordingUpdateSchema,
  TranscriptPartSchema,
} from '../recordings/recording-input.js'
import {
  DeletedRecordingSchema,
  DeliveryListSchema,
  DeliveryLogSchema,
  DeliverySchema,
  DisabledEnterpriseSchema,
  EnabledEndpointSchema,
  EndpointListSchema,
  EndpointSchema,
  EnterpriseCredentialsSchema,
  EnterpriseListSchema,
  EnterpriseSummarySchema,
  HealthSchema,
  ImportLineSchema,
  OverviewSchema,
  PushUrlSetSchema,
  ReplayableSchema,
  ReplayedDeliverySchema,
  ReplayedRangeSchema,
  RotatedKeySchema,
  StoredRecordingSchema,
  UnreceiptedReplayAnswerSchema,
  UpdatedRecordingSchema,
} from './admin-answers.js'
import {
  Components,
  errorBodySchema,
  type Json,
  jsonAnswer,
  jsonBody,
  ref,
  refusals,
  responseCodeSchema,
} from './openapi.js'

const {
  INVALID_REQUEST,
  INVALID_PARAMETER,
  UNAUTHORIZED,
  NOT_FOUND,
  PAYLOAD_TOO_LARGE,
  UNSUPPORTED_MEDIA_TYPE,
  INTERNAL_ERROR,
  UNAVAILABLE,
} = ResponseCode
/** Where admin-api.ts mounts the API (its ADMIN_PREFIX, not imported: admin-api.ts registers this module). */
const ADMIN_PREFIX = '/admin/v1'
const ALWAYS: ResponseCodeValue[] = [UNAUTHORIZED, INTERNAL_ERROR, UNAVAILABLE]
const WITH_BODY: ResponseCodeValue[] = [
  INVALID_REQUEST,
  INVALID_PARAMETER,
  PAYLOAD_TOO_LARGE,
  UNSUPPORTED_MEDIA_TYPE,
]
const WITH_ID: ResponseCodeValue[] = [INVALID_PARAMETER, NOT_FOUND]

/** The operators' API as an OpenAPI 3.1 document. */
export function adminApiDocument(): Json {
  const components = new Components()
  const named = (name: string, schema: TSchema, description?: string) =>
    components.name(name, schema, description ? { description } : {})

  named('NewEnterprise', NewEnterpriseSchema, 'A new enterprise; fields other than these are ignored.')
  named('EnterpriseCredentials', EnterpriseCredentialsSchema, 'A new key: the only time its secret is shown.')
  named(
    'RotatedKey',
    RotatedKeySchema,
    'A rotation: the new key, and until when the previous one is accepted.',
  )
  named('EnterpriseSummary', EnterpriseSummarySchema)
  named('PushUrlChange', PushUrlChangeSchema, 'Sets (a URL) or clears (null or absent) the push URL.')
  named(
    'RecordingInput',
    RecordingInputSchema,
    'One recording to ingest: an audio part (denoiseUrl and recordDuration), a transcript, or both. recordedAt is ISO-8601 with an explicit offset; an absent audioId is assigned.',
  )
  named(
    'TranscriptPart',
    TranscriptPartSchema,
    "A recording's transcript part, at most 112 KiB as the query returns it.",
  )
  named(
    'RecordingUpdate',
    RecordingUpdateSchema,
    "An update of a recording's fields (at least one; the audio part's two together), an `updated` change.",
  )
  named('ImportLine', ImportLineSchema, "One line of an import's answer.")
  named('Delivery', DeliverySchema, 'A push delivery with every attempt.')
  named(
    'ReplayRange',
    ReplayRangeSchema,
    'Replays the failed and unconfirmed deliveries created in [from, to).',
  )
  named(
    'UnreceiptedReplay',
    UnreceiptedReplaySchema,
    'Pushes again every delivery created since `since` that was never receipted (acked, failed, unconfirmed); pending and in-flight ones are pushed anyway.',
  )
  named('Endpoint', EndpointSchema, "A push URL's health.")
  named('EndpointEnable', EndpointEnableSchema)
  components.name('ResponseCode', responseCodeSchema())
  components.name('ErrorBody', errorBodySchema())

  const json = (schema: TSchema) => components.emit(schema)
  const path = (name: string, description: string, schema: Json) => ({
    name,
    in: 'path',
    required: true,
    description,
    schema,
  })
  const enterpriseId = path('enterpriseId', 'the enterprise', { type: 'integer', minimum: 1 })
  const audioId = path('audioId', 'the recording', { type: 'string', minLength: 1 })
  const deliveryId = path('deliveryId', 'the delivery', { type: 'integer', minimum: 1 })
  const operation = (
    id: string,
    tag: string,
    summary: string,
    answers: Record<string, Json>,
    codes: ResponseCodeValue[],
    more: Json = {},
  ) => ({
    operationId: id,
    tags: [tag],
    summary,
    ...more,
    responses: { ...answers, ...refusals([...new Set([...codes, ...ALWAYS])].sort((a, b) => a - b)) },
  })
  const ok = (description: string, schema: TSchema) => ({ '200': jsonAnswer(description, json(schema)) })

  const listQuery = Object.entries(DeliveryListQuerySchema.properties).map(([name, schema]) => ({
    name,
    in: 'query',
    required: false,
    description: (schema as { description?: string }).description,
    schema: json(schema),
  }))

  const query = (name: string, description: string, schema: Json, required = false) => ({
    name,
    in: 'query',
    required,
    description,
    schema,
  })
  const instant = { type: 'string', description: 'ISO-8601 with an explicit offset or Z' }
  const logQuery = [
    ...listQuery.filter((parameter) => parameter.name !== 'limit'),
    query('from', 'only deliveries created at or after this instant', instant),
    query('to', 'only deliveries created before this instant', instant),
    query('limit', 'deliveries per page, default 25', { type: 'integer', minimum: 1, maximum: 200 }),
  ]

  const enterprises = `${ADMIN_PREFIX}/enterprises`
  const recording = `${enterprises}/{enterpriseId}/recordings/{audioId}`

  return {
    openapi: '3.1.0',
    info: {
      title: 'Earshot admin API',
      version: '1',
      description:
        "The operators' API: enterprises and their keys, recordings, push deliveries and push URL health. It listens on its own port (EARSHOT_ADMIN_PORT, 8081), bound to loopback by default; every route but /healthz, /openapi.json, /docs and the console's pages needs the admin token (EARSHOT_ADMIN_TOKEN) as a bearer token. Successes answer with the resource itself; refusals with `{code, msg, requestId}`, the codes of the ResponseCode schema.",
    },
    tags: [
      { name: 'enterprises', description: 'Enterprises, their keys and push URLs' },
      { name: 'recordings', description: 'Ingesting, updating and deleting recordings' },
      { name: 'deliveries', description: 'Push deliveries and their replay' },
      { name: 'endpoints', description: 'The health of push URLs' },
      { name: 'operations', description: 'Health and metrics' },
      {
        name: 'console',
        description: "What the operators' console at /console reads beyond the routes above",
      },
    ],
    security: [{ adminToken: [] }],
    paths: {
      '/healthz': {
        get: operation('health', 'operations', 'Liveness (no token needed)', ok('Alive', HealthSchema), [], {
          security: [],
        }),
      },
      '/metrics': {
        get: operation(
          'metrics',
          'operations',
          'Prometheus metrics',
          {
            '200': {
              description: 'The Prometheus text exposition format',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
          },
          [],
        ),
      },
      [enterprises]: {
        post: operation(
          'createEnterprise',
          'enterprises',
          'Create an enterprise and its first key',
          { '201': jsonAnswer('Created: the secret is shown this once', ref('EnterpriseCredentials')) },
          WITH_BODY,
          { requestBody: jsonBody(ref('NewEnterprise')) },
        ),
        get: operation(
          'listEnterprises',
          'enterprises',
          'List enterprises with their keys',
          ok('Every enterprise, by id', EnterpriseListSchema),
          [],
        ),
      },
      [`${enterprises}/{enterpriseId}/disable`]: {
        post: operation(
          'disableEnterprise',
          'enterprises',
          'Disable an enterprise: its tokens stop working on every instance within 1 s',
          ok('Disabled', DisabledEnterpriseSchema),
          WITH_ID,
          { parameters: [enterpriseId] },
        ),
      },
      [`${enterprises}/{enterpriseId}/rotate-key`]: {
        post: operation(
          'rotateKey',
          'enterprises',
          'Issue a new key; the previous one stays valid for EARSHOT_KEY_GRACE (24 h)',
          { '200': jsonAnswer('The new key, shown this once', ref('RotatedKey')) },
          WITH_ID,
          { parameters: [enterpriseId] },
        ),
      },
      [`${enterprises}/{enterpriseId}/push-url`]: {
        put: operation(
          'setPushUrl',
          'enterprises',
          'Set or clear the push URL',
          ok('Set', PushUrlSetSchema),
          [...WITH_BODY, NOT_FOUND],
          { parameters: [enterpriseId], requestBody: jsonBody(ref('PushUrlChange')) },
        ),
      },
      [`${enterprises}/{enterpriseId}/recordings`]: {
        post: operation(
          'ingestRecording',
          'recordings',
          'Ingest one recording (and schedule its pushes)',
          { '201': jsonAnswer('Stored', json(StoredRecordingSchema)) },
          [...WITH_BODY, NOT_FOUND],
          { parameters: [enterpriseId], requestBody: jsonBody(ref('RecordingInput')) },
        ),
      },
      [`${enterprises}/{enterpriseId}/recordings/import`]: {
        post: operation(
          'importRecordings',
          'recordings',
          'Import a JSON Lines file of recordings',
          {
            '200': {
              description:
                'Every line was valid: the import commits in chunks of 500 and streams a progress line after each; the last line is the summary, or an error if it stopped part-way (importing the same file again completes it).',
              content: {
                'application/x-ndjson': {
                  schema: { type: 'string', description: 'one ImportLine per line' },
                  'x-earshot-line-schema': '#/components/schemas/ImportLine',
                },
              },
            },
          },
          [...WITH_BODY, NOT_FOUND],
          {
            description:
              'The body is streamed and read line by line (up to EARSHOT_ADMIN_BODY_LIMIT; a line up to 4 MiB). Every line is validated before anything is written: the first 10 bad lines are refused with their line numbers (4001) and nothing is imported. A line whose audioId is stored with the same content is skipped; one that only adds a transcript attaches it.',
            parameters: [enterpriseId],
            requestBody: {
              required: true,
              content: Object.fromEntries(
                ['application/x-ndjson', 'application/jsonl'].map((type) => [
                  type,
                  {
                    schema: { type: 'string', description: 'one RecordingInput per line' },
                    'x-earshot-line-schema': '#/components/schemas/RecordingInput',
                  },
                ]),
              ),
            },
          },
        ),
      },
      [`${recording}/transcript`]: {
        put: operation(
          'attachTranscript',
          'recordings',
          "Attach or replace a recording's transcript (a transcript_ready push)",
          ok('Stored', StoredRecordingSchema),
          [...WITH_BODY, NOT_FOUND],
          { parameters: [enterpriseId, audioId], requestBody: jsonBody(ref('TranscriptPart')) },
        ),
      },
      [recording]: {
        patch: operation(
          'updateRecording',
          'recordings',
          "Update a recording's fields",
          ok('Updated (or already so)', UpdatedRecordingSchema),
          [...WITH_BODY, NOT_FOUND],
          { parameters: [enterpriseId, audioId], requestBody: jsonBody(ref('RecordingUpdate')) },
        ),
        delete: operation(
          'deleteRecording',
          'recordings',
          'Delete a recording: a tombstone stays, its unconfirmed deliveries are cancelled, a recording.deleted push goes out',
          ok('Deleted', DeletedRecordingSchema),
          WITH_ID,
          { parameters: [enterpriseId, audioId] },
        ),
      },
      [`${ADMIN_PREFIX}/deliveries`]: {
        get: operation(
          'listDeliveries',
          'deliveries',
          'List deliveries with their attempts, newest first',
          ok('A page of deliveries', DeliveryListSchema),
          [INVALID_PARAMETER],
          { parameters: listQuery },
        ),
      },
      [`${ADMIN_PREFIX}/deliveries/{deliveryId}`]: {
        get: operation(
          'showDelivery',
          'deliveries',
          'Show a delivery with its attempts',
          { '200': jsonAnswer('The delivery', ref('Delivery')) },
          WITH_ID,
          { parameters: [deliveryId] },
        ),
      },
      [`${ADMIN_PREFIX}/deliveries/{deliveryId}/replay`]: {
        post: operation(
          'replayDelivery',
          'deliveries',
          'Replay a failed or unconfirmed delivery: back to pending, due now, same eventId',
          ok('Replayed', ReplayedDeliverySchema),
          WITH_ID,
          { parameters: [deliveryId] },
        ),
      },
      [`${enterprises}/{enterpriseId}/deliveries/replay`]: {
        post: operation(
          'replayRange',
          'deliveries',
          "Replay an enterprise's failed and unconfirmed deliveries created in a time range",
          ok('Replayed', ReplayedRangeSchema),
          [...WITH_BODY, NOT_FOUND],
          { parameters: [enterpriseId], requestBody: jsonBody(ref('ReplayRange')) },
        ),
      },
      [`${enterprises}/{enterpriseId}/deliveries/replay-unreceipted`]: {
        post: operation(
          'replayUnreceipted',
          'deliveries',
          'Push again every delivery never receipted since a time (or count them, with dryRun)',
          ok('Counted (dryRun) or replayed', UnreceiptedReplayAnswerSchema),
          [...WITH_BODY, NOT_FOUND],
          { parameters: [enterpriseId], requestBody: jsonBody(ref('UnreceiptedReplay')) },
        ),
      },
      [`${ADMIN_PREFIX}/endpoints`]: {
        get: operation(
          'listEndpoints',
          'endpoints',
          'List push URLs with their health',
          ok('By URL', EndpointListSchema),
          [],
        ),
      },
      [`${ADMIN_PREFIX}/endpoints/enable`]: {
        post: operation(
          'enableEndpoint',
          'endpoints',
          'Enable a push URL again: the deliveries it held go out in due order',
          ok('Enabled', EnabledEndpointSchema),
          [...WITH_BODY, NOT_FOUND],
          { requestBody: jsonBody(ref('EndpointEnable')) },
        ),
      },
      [`${ADMIN_PREFIX}/overview`]: {
        get: operation(
          'overview',
          'console',
          'Deliveries by state, the last hour of push attempts, queue depth and push URL health',
          ok('The figures', OverviewSchema),
          [],
        ),
      },
      [`${ADMIN_PREFIX}/delivery-log`]: {
        get: operation(
          'deliveryLog',
          'console',
          "List deliveries as GET /deliveries does, also by creation time, with the next page's cursor",
          ok('A page of deliveries', DeliveryLogSchema),
          [INVALID_PARAMETER],
          { parameters: logQuery },
        ),
      },
      [`${enterprises}/{enterpriseId}/deliveries/replayable`]: {
        get: operation(
          'countReplayable',
          'console',
          'Count what a range replay with these bounds would replay now',
          ok('The count', ReplayableSchema),
          WITH_ID,
          {
            parameters: [
              enterpriseId,
              query('from', 'inclusive lower bound on creation time', instant, true),
              query('to', 'exclusive upper bound on creation time', instant, true),
            ],
          },
        ),
      },
    },
    components: {
      schemas: components.schemas(),
      securitySchemes: {
        adminToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'EARSHOT_ADMIN_TOKEN (`earshot serve` prints one it generated)',
        },
      },
    },
  }
}
