import type { RouteContract } from '@earshot/protocol'
import { ResponseCode } from '@earshot/protocol'
import type { TSchema } from 'typebox'
import { DeliverySchema } from '../deliveries/delivery-answers.js'
import { ReplayRangeSchema, UnreceiptedReplaySchema } from '../deliveries/delivery-queries.js'
import { EndpointSchema } from '../endpoints/endpoint-answers.js'
import {
  EnterpriseCredentialsSchema,
  EnterpriseSummarySchema,
  RotatedKeySchema,
} from '../enterprises/enterprise-answers.js'
import { NewEnterpriseSchema, PushUrlChangeSchema } from '../enterprises/enterprise-input.js'
import { permissions } from '../http/permissions.js'
import { ImportLineSchema } from '../imports/import-answers.js'
import { PushUrlSchema } from '../push-urls/push-url-answers.js'
import { PushUrlEnableSchema } from '../push-urls/push-url-contract.js'
import {
  RecordingInputSchema,
  RecordingUpdateSchema,
  TranscriptPartSchema,
} from '../recordings/recording-input.js'
import { Components, errorBodySchema, type Json, responseCodeSchema } from './openapi.js'
import { documentPaths } from './route-document.js'

/** The schemas the admin document names (a component each, a $ref wherever they occur), with what they are. */
const NAMED: [string, TSchema, string?][] = [
  ['NewEnterprise', NewEnterpriseSchema, 'A new enterprise; fields other than these are ignored.'],
  ['EnterpriseCredentials', EnterpriseCredentialsSchema, 'A new key: the only time its secret is shown.'],
  ['RotatedKey', RotatedKeySchema, 'A rotation: the new key, and until when the previous one is accepted.'],
  ['EnterpriseSummary', EnterpriseSummarySchema],
  ['PushUrlChange', PushUrlChangeSchema, 'Sets (a URL) or clears (null or absent) the push URL.'],
  [
    'RecordingInput',
    RecordingInputSchema,
    'One recording to ingest: an audio part (denoiseUrl and recordDuration), a transcript, or both. recordedAt is ISO-8601 with an explicit offset; an absent audioId is assigned.',
  ],
  [
    'TranscriptPart',
    TranscriptPartSchema,
    "A recording's transcript part, at most 112 KiB as the query returns it.",
  ],
  [
    'RecordingUpdate',
    RecordingUpdateSchema,
    "An update of a recording's fields (at least one; the audio part's two together), an `updated` change.",
  ],
  ['ImportLine', ImportLineSchema, "One line of an import's answer."],
  ['Delivery', DeliverySchema, 'A push delivery with every attempt.'],
  ['ReplayRange', ReplayRangeSchema, 'Replays the failed and unconfirmed deliveries created in [from, to).'],
  [
    'UnreceiptedReplay',
    UnreceiptedReplaySchema,
    'Pushes again every delivery created since `since` that was never receipted (acked, failed, unconfirmed); pending and in-flight ones are pushed anyway.',
  ],
  ['PushUrl', PushUrlSchema, "A push URL's health."],
  [
    'Endpoint',
    EndpointSchema,
    "A push endpoint of an enterprise: its URL, event types, rate and its URL's health.",
  ],
  ['EndpointEnable', PushUrlEnableSchema],
]

/** The operators' API as an OpenAPI 3.1 document, made from the admin listener's routes. */
export function adminApiDocument(routes: readonly RouteContract[]): Json {
  const components = new Components()
  for (const [name, schema, description] of NAMED)
    components.name(name, schema, description ? { description } : {})
  components.name('ResponseCode', responseCodeSchema())
  components.name('ErrorBody', errorBodySchema())
  const { UNAUTHORIZED, INTERNAL_ERROR, UNAVAILABLE } = ResponseCode
  const paths = documentPaths(routes, {
    components,
    securityScheme: 'adminToken',
    everyRoute: [UNAUTHORIZED, INTERNAL_ERROR, UNAVAILABLE],
  })
  return {
    openapi: '3.1.0',
    info: {
      title: 'Earshot admin API',
      version: '1',
      description:
        "The operators' API: enterprises and their keys, recordings, push endpoints, deliveries and push URL health. It listens on its own port (EARSHOT_ADMIN_PORT, 8081), bound to loopback by default; every route but /healthz, /openapi.json, /docs and the console's pages needs the admin token (EARSHOT_ADMIN_TOKEN) as a bearer token. Successes answer with the resource itself; refusals with `{code, msg, requestId}`, the codes of the ResponseCode schema.",
    },
    tags: [
      { name: 'enterprises', description: 'Enterprises, their keys and push URLs' },
      { name: 'recordings', description: 'Ingesting, updating and deleting recordings' },
      { name: 'media', description: 'The keys signing the links to stored audio' },
      { name: 'deliveries', description: 'Push deliveries and their replay' },
      { name: 'endpoints', description: "Enterprises' push endpoints, and the health of push URLs" },
      { name: 'operations', description: 'Health and metrics' },
      {
        name: 'console',
        description: "What the operators' console at /console reads beyond the routes above",
      },
    ],
    'x-earshot-permissions': permissions,
    paths,
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
