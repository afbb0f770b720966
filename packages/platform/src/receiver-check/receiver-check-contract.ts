import { ResponseCode, RULE, routeContract, UNKNOWN_FIELD_RULE } from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { Url } from '../endpoints/endpoint-input.js'
import { EnterpriseParams } from '../enterprises/enterprise-contract.js'
import { WITH_BODY } from '../http/admin-refusals.js'
import type { Holds, Same } from '../http/answer-fields.js'
import type { CheckItem, ReceiverCheckReport } from './receiver-check.js'

/** How long the check waits for a receipt callback after a push's answer, at most and by default. */
export const MAX_CALLBACK_SECONDS = 60

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
export const checkReceiverContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/endpoints/check',
  operationId: 'checkReceiver',
  tag: 'endpoints',
  summary: "Check a partner's push receiver against the protocol",
  description:
    "Pushes a scripted series to the URL, sealed with the enterprise's current key and marked X-Earshot-Check: 1 (audioIds beginning check_; their receipt callbacks are recorded by the check, never as receipts), and reports each item with what came back. Answers once the last callback arrived or its time passed (up to callbackWithinSeconds after the pushes). A check stops when its caller's connection closes. At most EARSHOT_RECEIVER_CHECKS_PER_ENTERPRISE checks of an enterprise, and EARSHOT_RECEIVER_CHECKS in all, run at once on an instance: past them 4290 with Retry-After. A disabled enterprise's receiver is not checked (4030).",
  params: EnterpriseParams,
  body: { json: ReceiverCheckRequestSchema },
  answer: { description: 'The verdict on each item', payload: { json: ReceiverCheckReportSchema } },
  refusals: [...WITH_BODY, ResponseCode.FORBIDDEN, ResponseCode.NOT_FOUND, ResponseCode.RATE_LIMITED],
  permission: 'endpoints.write',
})
