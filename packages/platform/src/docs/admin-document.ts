import type { RouteContract } from '@earshot/protocol'
import { ResponseCode } from '@earshot/protocol'
import { roles } from '../access/roles.js'
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
  const { UNAUTHORIZED, FORBIDDEN_BY_ROLE, INTERNAL_ERROR, UNAVAILABLE } = ResponseCode
  const paths = documentPaths(routes, {
    components,
    securityScheme: 'adminAuth',
    everyRoute: [UNAUTHORIZED, FORBIDDEN_BY_ROLE, INTERNAL_ERROR, UNAVAILABLE],
    openPermission: 'public',
  })
  return {
    openapi: '3.1.0',
    info: {
      title: 'Earshot admin API',
      version: '1',
      description:
        "The operators' API: enterprises and their keys, recordings, push endpoints, deliveries, push URL health, operators, API keys and the audit trail. It listens on its own port (EARSHOT_ADMIN_PORT, 8081), bound to loopback by default. Every route but the public ones (`x-earshot-permission: public`: health, sign-in, setup, single sign-on) needs an API key (`Authorization: Bearer esk_…`), the break-glass owner key EARSHOT_ADMIN_TOKEN, or a console session (its cookie, and its `x-csrf-token` header on a change). Each operation names the permission it needs in `x-earshot-permission`; the caller's role must grant it, else 4031. An enterprise outside the caller's scope answers 4040, as an unknown one does. Successes answer with the resource itself; refusals with `{code, msg, requestId}`, the codes of the ResponseCode schema.",
    },
    tags: [
      { name: 'enterprises', description: 'Enterprises, their keys and push URLs' },
      { name: 'recordings', description: 'Ingesting, updating and deleting recordings' },
      { name: 'media', description: 'The keys signing the links to stored audio' },
      { name: 'deliveries', description: 'Push deliveries and their replay' },
      { name: 'endpoints', description: "Enterprises' push endpoints, and the health of push URLs" },
      { name: 'operations', description: 'Health and metrics' },
      { name: 'access', description: 'Signing in, operators and their roles, API keys' },
      { name: 'audit', description: 'The audit trail: who changed what, and its verification' },
      {
        name: 'console',
        description: "What the operators' console at /console reads beyond the routes above",
      },
    ],
    'x-earshot-permissions': permissions,
    'x-earshot-roles': roles,
    paths,
    components: {
      schemas: components.schemas(),
      securitySchemes: {
        adminAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key (esk_…, `earshot keys create`), or the break-glass EARSHOT_ADMIN_TOKEN. The console sends its session cookie instead.',
        },
      },
    },
  }
}
