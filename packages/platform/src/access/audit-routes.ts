import { Readable } from 'node:stream'
import { messageParser } from '@earshot/protocol'
import {
  AuditQuerySchema,
  exportAuditContract,
  listAuditContract,
  verifyAuditContract,
} from '../audit/audit-contract.js'
import { everyAuditRow, listAudit, verifyAudit } from '../audit/audit-trail.js'
import { defineRoute } from '../http/route-spec.js'
import type { Database } from '../storage/database.js'
import { scopeOf } from './principal.js'

/** What the audit routes read of the running platform. */
interface AuditContext {
  db: Database
}

const AuditQuery = messageParser(AuditQuerySchema)

const listAuditRoute = defineRoute(
  listAuditContract,
  (context: AuditContext) =>
    async function listAuditHandler(request) {
      const query = AuditQuery.parse(request.query ?? {})
      const rows = await listAudit(context.db, {
        ...(query.actor !== undefined && { actorId: query.actor }),
        ...(query.enterprise !== undefined && { enterpriseId: Number(query.enterprise) }),
        ...(query.since !== undefined && { since: query.since }),
        ...(query.before !== undefined && { before: Number(query.before) }),
        limit: query.limit === undefined ? 100 : Math.min(1000, Number(query.limit)),
        enterprises: scopeOf(request),
      })
      return { rows }
    },
)

const verifyAuditRoute = defineRoute(
  verifyAuditContract,
  (context: AuditContext) => async () => verifyAudit(context.db),
)

const exportAuditRoute = defineRoute(
  exportAuditContract,
  (context: AuditContext) =>
    async function exportAuditHandler(request, reply) {
      const scope = scopeOf(request)
      async function* lines() {
        for await (const row of everyAuditRow(context.db)) {
          const enterpriseId = row.target.enterpriseId
          if (scope === null || (enterpriseId !== undefined && scope.includes(Number(enterpriseId)))) {
            yield `${JSON.stringify(row)}\n`
          }
        }
      }
      return reply.type('application/x-ndjson').send(Readable.from(lines()))
    },
)

export const auditRoutes = [listAuditRoute, verifyAuditRoute, exportAuditRoute]
