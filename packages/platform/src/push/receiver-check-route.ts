import { messageParser, ResponseCode, RULE, UNKNOWN_FIELD_RULE } from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import { EnterpriseParams, requireEnabledEnterprise } from '../enterprises/enterprise-params.js'
import { idParam, jsonObject, WITH_BODY } from '../http/admin-params.js'
import type { Holds, Same } from '../http/answer-fields.js'
import { ApiError } from '../http/api-error.js'
import { InFlight } from '../http/in-flight.js'
import type { RouteSpec } from '../http/route-spec.js'
import { endpointUrl, Url } from './endpoint-input.js'
import { type CheckItem, checkReceiver, type ReceiverCheckReport } from './receiver-check.js'

/** How long the check waits for a receipt callback after a push's answer, at most and by default. */
const MAX_CALLBACK_SECONDS = 60

export const ReceiverCheckRequestSchema = Type.Object(
  {
    url: Url,
    callbackWithinSeconds: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_CALLBACK_SECONDS,
        description: `how long to wait for each receipt callback after its push's answer (default ${MAX_CALLBACK_SECONDS})`,
        [RULE]: `must be an integer from 1 to ${MAX_CALLBACK_SECONDS}`,
      }),
    ),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field of a check: give url, callbackWithinSeconds',
  },
)
const ReceiverCheckRequest = messageParser(ReceiverCheckRequestSchema)

const CHECK_ITEM_IDS: CheckItem['id'][] = [
  'valid-push',
  'same-event-again',
  'tampered-tag',
  'other-key',
  'not-an-envelope',
  'replayed-envelope',
  'unknown-fields',
  'deletion',
  'callbacks',
]

export const ReceiverCheckReportSchema = Type.Object({
  url: Type.String({ description: 'the URL checked, normalized' }),
  enterpriseId: Type.Integer(),
  keyVersion: Type.Integer({ description: "the enterprise's current key, which sealed the pushes" }),
  passed: Type.Boolean({ description: 'every failure item passed (warnings aside)' }),
  items: Type.Array(
    Type.Object({
      id: Type.Enum(CHECK_ITEM_IDS),
      severity: Type.Enum(['failure', 'warning'], {
        description: 'a failure item decides `passed`; a warning item is reported only',
      }),
      passed: Type.Boolean(),
      expected: Type.String({ description: 'what a receiver that follows the protocol does' }),
      evidence: Type.String({ description: 'what came back: HTTP status, code and time, or the error' }),
    }),
  ),
})
export type ReceiverCheckReportSchemaDescribesItsType = Holds<
  Same<Static<typeof ReceiverCheckReportSchema>, ReceiverCheckReport>
>

/** POST …/endpoints/check: the receiver check, run against a URL before it becomes an endpoint (or after). */
export const receiverCheckRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('checkReceiver'),
  tag: 'endpoints',
  summary: "Check a partner's push receiver against the protocol",
  description:
    "Pushes a scripted series to the URL, sealed with the enterprise's current key and marked X-Earshot-Check: 1 (audioIds beginning check_; their receipt callbacks are recorded by the check, never as receipts), and reports each item with what came back. Answers once the last callback arrived or its time passed (up to callbackWithinSeconds after the pushes). A check stops when its caller's connection closes. At most EARSHOT_RECEIVER_CHECKS_PER_ENTERPRISE checks of an enterprise, and EARSHOT_RECEIVER_CHECKS in all, run at once on an instance: past them 4290 with Retry-After. A disabled enterprise's receiver is not checked (4030).",
  params: EnterpriseParams,
  body: { json: ReceiverCheckRequestSchema },
  answer: { description: 'The verdict on each item', payload: { json: ReceiverCheckReportSchema } },
  refusals: [...WITH_BODY, ResponseCode.FORBIDDEN, ResponseCode.NOT_FOUND, ResponseCode.RATE_LIMITED],
  handle: (context) =>
    async function check(request, reply) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const body = ReceiverCheckRequest.parse(jsonObject(request.body))
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
        return await checkReceiver(context, enterpriseId, url, within, caller.signal)
      } catch (error) {
        if (!caller.signal.aborted) throw error
        // Nobody reads this answer; its refusal is the request's log line.
        throw new ApiError(ResponseCode.INVALID_REQUEST, 'the caller went away: the check was stopped')
      } finally {
        reply.raw.off('close', left)
        release()
      }
    },
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
