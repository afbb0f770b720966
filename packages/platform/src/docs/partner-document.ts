import type { RouteContract } from '@earshot/protocol'
import {
  AccessTokenSchema,
  AudioRecordingDataSchema,
  CallbackPlaintextSchema,
  ChangePageSchema,
  ChangeSchema,
  ChangesRequestSchema,
  EnvelopeSchema,
  MAX_ENTERPRISE_ID,
  PushEventSchema,
  RecordingDataSchema,
  RecordingFilterSchema,
  RecordingListSchema,
  TokenPlaintextSchema,
  TokenRequestSchema,
  TranscriptRecordingDataSchema,
} from '@earshot/protocol'
import type { TSchema } from 'typebox'
import type { WebhookSpec } from '../http/route-spec.js'
import {
  Components,
  errorBodySchema,
  type Json,
  PLAINTEXT,
  ref,
  responseCodeSchema,
  SEALED,
} from './openapi.js'
import { documentPaths, documentWebhooks } from './route-document.js'

const SEALED_NOTE =
  "Sealed: this object never travels in the clear. It is the UTF-8 JSON plaintext of an envelope's `ciphertext` (AES-256-GCM under the enterprise's secret, no additional authenticated data)."

const ENVELOPE = `The encrypted envelope that carries every partner request body and every sealed answer's \`data\`. \`ciphertext\` is the AES-256-GCM encryption of a UTF-8 JSON object (the plaintext, a schema marked \`${SEALED}\`) under the enterprise's 32-byte secret with \`nonce\` as the IV and no additional authenticated data; \`tag\` is the 16-byte authentication tag. \`nonce\`, \`ciphertext\` and \`tag\` are canonical standard Base64 (padding required). Seal every request afresh: a nonce already accepted under the same enterprise and keyVersion is refused (4090). An answer's envelope uses the request's keyVersion and echoes its eventId. Unknown extra fields are ignored. Which plaintext an envelope holds is named by its schema's \`${PLAINTEXT}\`.`

/** The plaintexts an envelope carries (a component each, marked sealed), with what they are. */
const SEALED_PLAINTEXTS: [string, TSchema, string][] = [
  [
    'TokenPlaintext',
    TokenPlaintextSchema,
    "The token request's plaintext; may be `{}`. An enterpriseId inside must equal the one beside the envelope (else 4012).",
  ],
  [
    'RecordingFilter',
    RecordingFilterSchema,
    'The query filter: every field optional; matches startTime <= recordedAt < endTime; startTime after endTime, a time without an offset and an unknown field are refused (4001).',
  ],
  [
    'TranscriptRecordingData',
    TranscriptRecordingDataSchema,
    "Set A (transcript form), a recording's data once its transcript exists. transcriptSentences is a JSON array of {text, beginTime, endTime} serialized into a string.",
  ],
  [
    'AudioRecordingData',
    AudioRecordingDataSchema,
    "Set B (audio-file form), a recording's data while it has only its audio part.",
  ],
  ['RecordingData', RecordingDataSchema, "A recording's data: set A once its transcript exists, else set B."],
  [
    'RecordingList',
    RecordingListSchema,
    'A page of the query: newest first (recordedAt, then audioId, descending), stable across pages; total counts every match; a page past the end has no items and the true total.',
  ],
  [
    'CallbackPlaintext',
    CallbackPlaintextSchema,
    'The receipt callback: the audioId of a recording the partner stored from a push.',
  ],
  [
    'ChangesRequest',
    ChangesRequestSchema,
    'A change feed request: no cursor starts at the beginning; a malformed cursor is refused (4001).',
  ],
  [
    'Change',
    ChangeSchema,
    "One change of the feed: data is the recording's current data, absent for `deleted` and for every earlier change of a recording deleted since.",
  ],
  [
    'ChangePage',
    ChangePageSchema,
    'A page of the change feed: seq increases strictly; pass nextCursor to read on; hasMore is false once caught up.',
  ],
  [
    'PushEvent',
    PushEventSchema,
    'What the platform pushes: one event per recording part made available, or per deletion (data `{}`).',
  ],
]

/** The partner API (10) as an OpenAPI 3.1 document, made from the partner listener's routes and the push. */
export function partnerApiDocument(routes: readonly RouteContract[], webhooks: readonly WebhookSpec[]): Json {
  const components = new Components()
  const sealed = (name: string, schema: TSchema, description: string) =>
    components.name(name, schema, { description: `${description}\n\n${SEALED_NOTE}`, [SEALED]: true })

  components.name('Envelope', EnvelopeSchema, { description: ENVELOPE })
  components.name('TokenRequest', TokenRequestSchema, {
    description:
      'The token request: an envelope with the enterpriseId beside its fields, in plaintext; the enterpriseId picks the key. Its ciphertext holds a TokenPlaintext (sealed).',
    [PLAINTEXT]: '#/components/schemas/TokenPlaintext',
  })
  components.name('BearerEnvelope', {
    allOf: [
      ref('Envelope'),
      {
        type: 'object',
        properties: {
          enterpriseId: {
            type: 'integer',
            minimum: 1,
            maximum: MAX_ENTERPRISE_ID,
            description: "optional; when sent it must be the bearer token's enterprise (else 4012)",
          },
        },
      },
    ],
    description: 'An envelope sent with a bearer token.',
  })
  for (const [name, schema, description] of SEALED_PLAINTEXTS) sealed(name, schema, description)
  components.name('AccessToken', AccessTokenSchema, {
    description: "The token answer's data, not encrypted.",
  })
  components.name('ResponseCode', responseCodeSchema())
  components.name('ErrorBody', errorBodySchema())

  const envelopes = new Set<string>()
  /** The envelope component whose ciphertext holds a named plaintext, made on first use. */
  const envelopeOf = (plaintext: TSchema, bearer: boolean): Json => {
    const name = components.nameOf(plaintext)
    if (!name) throw new Error('a sealed plaintext must be a named component')
    if (!envelopes.has(name)) {
      envelopes.add(name)
      components.name(`Sealed${name}`, {
        allOf: [ref(bearer ? 'BearerEnvelope' : 'Envelope')],
        description: `An envelope${bearer ? ' sent with a bearer token' : ''}. Its ciphertext holds a ${name} (sealed).`,
        [PLAINTEXT]: `#/components/schemas/${name}`,
      })
    }
    return ref(`Sealed${name}`)
  }
  const style = { components, securityScheme: 'accessToken', everyRoute: [], sealed: envelopeOf }
  const paths = documentPaths(routes, style)
  const pushes = documentWebhooks(webhooks, style)

  return {
    openapi: '3.1.0',
    info: {
      title: 'Earshot partner API',
      version: '1',
      description:
        "The partner-facing API of Earshot: a bearer token, the recordings query, the change feed and the receipt callback under /openapi/v1, stored audio under /media/v1 (signed links), and the platform's push to the partner (under webhooks). Every request body is an encrypted envelope (the Envelope schema); the JSON it carries is a schema marked `x-earshot-sealed`, named by the envelope's `x-earshot-plaintext`. Every answer is `{code, msg, requestId}` plus `data` on success; the codes are the ResponseCode schema, the HTTP status is code / 10.",
    },
    tags: [
      { name: 'authentication', description: 'Access tokens' },
      { name: 'recordings', description: 'The recordings query and the receipt callback' },
      { name: 'changes', description: 'The change feed' },
      {
        name: 'media',
        description:
          "Audio Earshot stores: a recording's denoiseUrl is a signed link that expires; query again for a fresh one",
      },
      { name: 'health', description: 'Probes for load balancers and orchestrators' },
    ],
    paths,
    webhooks: pushes,
    components: {
      schemas: components.schemas(),
      securitySchemes: {
        accessToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'An accessToken from POST /openapi/v1/token (valid expiresIn seconds, default 7200)',
        },
      },
    },
  }
}
