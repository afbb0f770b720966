import {
  type ComponentNote,
  componentOf,
  MAX_ENTERPRISE_ID,
  PLAINTEXT_EXTENSION,
  type RouteContract,
  SEALED_EXTENSION,
} from '@earshot/protocol'
import type { TSchema } from 'typebox'
import type { WebhookSpec } from '../http/route-spec.js'
import {
  Components,
  declaredComponents,
  errorBodySchema,
  type Json,
  ref,
  responseCodeSchema,
} from './openapi.js'
import { documentPaths, documentWebhooks } from './route-document.js'

const SEALED_NOTE =
  "Sealed: this object never travels in the clear. It is the UTF-8 JSON plaintext of an envelope's `ciphertext` (AES-256-GCM under the enterprise's secret, no additional authenticated data)."

/** A component's annotations in this document: what it is, and whether it is sealed or holds a plaintext. */
function annotations({ description, sealed, plaintext }: ComponentNote): Json {
  const holds = plaintext && componentOf(plaintext)?.name
  if (plaintext && !holds) throw new Error('an envelope names a plaintext that is not a component')
  return {
    ...(description !== undefined && {
      description: sealed ? `${description}\n\n${SEALED_NOTE}` : description,
    }),
    ...(sealed && { [SEALED_EXTENSION]: true }),
    ...(holds && { [PLAINTEXT_EXTENSION]: `#/components/schemas/${holds}` }),
  }
}

/** The partner API (10) as an OpenAPI 3.1 document, made from the partner listener's routes and the push. */
export function partnerApiDocument(routes: readonly RouteContract[], webhooks: readonly WebhookSpec[]): Json {
  const components = new Components()
  for (const { schema, note } of declaredComponents([...routes, ...webhooks]))
    components.name(note.name, schema, annotations(note))
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
        [PLAINTEXT_EXTENSION]: `#/components/schemas/${name}`,
      })
    }
    return ref(`Sealed${name}`)
  }
  const style = {
    components,
    securityScheme: 'accessToken',
    securityOf: (route: RouteContract) => (route.tag === 'portal' ? 'portalSession' : undefined),
    everyRoute: [],
    sealed: envelopeOf,
  }
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
      {
        name: 'portal',
        description:
          "The partner portal's routes, for its page in a browser: a one-time link opens a session (a cookie), and the self-service actions are served in the clear to it",
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
        portalSession: {
          type: 'apiKey',
          in: 'cookie',
          name: 'earshot_portal',
          description:
            'A portal session, set by GET /portal/enter/{link}; every POST also carries its csrfToken as x-csrf-token',
        },
      },
    },
  }
}
