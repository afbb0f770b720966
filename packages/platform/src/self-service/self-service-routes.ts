import type { JsonObject } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import type { Actor } from '../audit/audit-entry.js'
import { auditFields, sourceOf } from '../audit/audit-entry.js'
import { auditedCall } from '../audit/audited-call.js'
import { auditedDatabase } from '../audit/audited-changes.js'
import { authenticate } from '../auth/authenticate.js'
import { type PartnerEnv, replySealed } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context/platform-context.js'
import { bearerCredentials } from '../http/bearer.js'
import type { RouteSpec } from '../http/route-spec.js'
import { type SelfServiceAction, type SelfServiceCall, selfServiceActions } from './self-service-actions.js'

/*
 * The partner API's self-service routes: each action of self-service-actions.ts as a sealed POST, opened and
 * guarded as every partner request, answered sealed with the request's key. A change is recorded in the audit
 * trail with the token as its actor.
 */

/** The partner's token as the trail names it: by its salt, which identifies it without granting anything. */
function tokenActor(request: FastifyRequest, enterpriseId: number): Actor {
  const salt = bearerCredentials(request.headers.authorization)?.split('.')[4] ?? 'unknown'
  return { kind: 'partner', id: `token ${salt}`, name: `enterprise ${enterpriseId} (partner API)` }
}

/** What a change is recorded as: its operation, its fields (secrets left out), who and from where. */
function partnerChange(
  request: FastifyRequest,
  operation: string,
  actor: Actor,
  enterpriseId: number,
  body: unknown,
) {
  return {
    actor,
    operation,
    ...sourceOf(request),
    target: { enterpriseId },
    before: null,
    after: auditFields(body, true),
  }
}

/** Runs an action for a caller of an enterprise: a change with its row pending in the audit trail. */
export function runAction(
  action: Pick<SelfServiceAction, 'contract' | 'changes' | 'run'>,
  call: SelfServiceCall,
  request: FastifyRequest,
  actor: Actor,
  body: unknown,
): Promise<object> {
  if (!action.changes) return action.run(call, body)
  const { context } = call
  const audited = { ...context, db: auditedDatabase(context.db, context.clock) }
  const change = partnerChange(request, action.contract.operationId, actor, call.enterpriseId, body)
  return auditedCall(context.db, context.clock, change, () => action.run({ ...call, context: audited }, body))
}

/** A self-service action as a sealed partner-API route. */
export function sealedSelfServiceRoute(
  action: Pick<SelfServiceAction, 'contract' | 'changes' | 'run'>,
): RouteSpec<PartnerEnv<PlatformContext>> {
  return {
    ...action.contract,
    handle: ({ context, rateLimit }: PartnerEnv<PlatformContext>) =>
      async function selfService(request, reply) {
        const opened = await authenticate(context, request, rateLimit)
        const { enterpriseId } = opened
        const actor = tokenActor(request, enterpriseId)
        const answer = await runAction(
          action,
          { context, enterpriseId, reply },
          request,
          actor,
          opened.plaintext,
        )
        return replySealed(request, reply, opened, answer as JsonObject)
      },
  }
}

export const selfServiceRoutes = selfServiceActions.map(sealedSelfServiceRoute)
