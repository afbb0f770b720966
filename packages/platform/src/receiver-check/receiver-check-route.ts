import {
  MAX_CALLBACK_SECONDS,
  messageParser,
  ReceiverCheckRequestSchema,
  ResponseCode,
} from '@earshot/protocol'
import type { FastifyReply } from 'fastify'
import { outsideAudit } from '../audit/audited-changes.js'
import type { PlatformContext } from '../context/platform-context.js'
import { endpointUrl } from '../endpoints/endpoint-input.js'
import { requireEnabledEnterprise } from '../enterprises/enterprise-params.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { InFlight } from '../http/in-flight.js'
import { defineRoute } from '../http/route-spec.js'
import { checkReceiver, type ReceiverCheckReport } from './receiver-check.js'
import { checkReceiverContract } from './receiver-check-contract.js'

const ReceiverCheckRequest = messageParser(ReceiverCheckRequestSchema)

/** POST …/endpoints/check: the receiver check, run against a URL before it becomes an endpoint (or after). */
export const receiverCheckRoute = defineRoute(
  checkReceiverContract,
  (context: PlatformContext) =>
    async function check(request, reply) {
      const enterpriseId = idParam(request, 'enterpriseId')
      return runReceiverCheck(context, enterpriseId, jsonObject(request.body), reply)
    },
)

/**
 * Runs the receiver check asked for by a request body (`{url, callbackWithinSeconds?}`) against an
 * enterprise's receiver, within the instance's caps; stops it when the caller's connection closes.
 */
export async function runReceiverCheck(
  context: PlatformContext,
  enterpriseId: number,
  requestBody: unknown,
  reply: FastifyReply,
): Promise<ReceiverCheckReport> {
  const body = ReceiverCheckRequest.parse(requestBody)
  const url = await endpointUrl(body.url, context.config)
  await requireEnabledEnterprise(context.db, enterpriseId)
  const within = (body.callbackWithinSeconds ?? MAX_CALLBACK_SECONDS) * 1000
  const release = checkSlot(context, enterpriseId)
  const caller = new AbortController()
  const left = () => {
    if (!reply.raw.writableEnded) caller.abort()
  }
  reply.raw.once('close', left)
  try {
    // The check's records are its own bookkeeping: its trail row is appended once it has answered.
    return await outsideAudit(() => checkReceiver(context, enterpriseId, url, within, caller.signal))
  } catch (error) {
    if (!caller.signal.aborted) throw error
    // Nobody reads this answer; its refusal is the request's log line.
    throw new ApiError(ResponseCode.INVALID_REQUEST, 'the caller went away: the check was stopped')
  } finally {
    reply.raw.off('close', left)
    release()
  }
}

/** A check ends within minutes (its pushes' timeouts, then callbackWithinSeconds). */
const CHECK_RETRY_AFTER_SECONDS = 30

/** The checks running on this instance, shared by every listener that mounts the route. */
const runningChecks = new WeakMap<PlatformContext, InFlight>()

/** Counts a check under its enterprise and under all until it ends; 4290 past either cap. */
function checkSlot(context: PlatformContext, enterpriseId: number): () => void {
  let checks = runningChecks.get(context)
  if (!checks) {
    checks = new InFlight(CHECK_RETRY_AFTER_SECONDS)
    runningChecks.set(context, checks)
  }
  return checks.take([
    {
      key: `enterprise ${enterpriseId}`,
      max: context.config.receiverChecksPerEnterprise,
      refusal: (max) =>
        `enterprise ${enterpriseId} has ${max} receiver checks running, the most it may have at once (EARSHOT_RECEIVER_CHECKS_PER_ENTERPRISE): retry after Retry-After seconds`,
    },
    {
      key: 'all',
      max: context.config.receiverChecks,
      refusal: (max) =>
        `${max} receiver checks are running, the most this instance runs at once (EARSHOT_RECEIVER_CHECKS): retry after Retry-After seconds`,
    },
  ])
}
