import type { RouteContract } from '@earshot/protocol'
import { ResponseCode } from '@earshot/protocol'
import { permissions } from '../http/permissions.js'
import { Components, declaredComponents, errorBodySchema, type Json, responseCodeSchema } from './openapi.js'
import { documentPaths } from './route-document.js'

/** The operators' API as an OpenAPI 3.1 document, made from the admin listener's routes. */
export function adminApiDocument(routes: readonly RouteContract[]): Json {
  const components = new Components()
  // The partner's plaintexts (a recording's data) are answered here in the clear, inline.
  for (const { schema, note } of declaredComponents(routes)) {
    if (!note.sealed)
      components.name(note.name, schema, note.description ? { description: note.description } : {})
  }
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
