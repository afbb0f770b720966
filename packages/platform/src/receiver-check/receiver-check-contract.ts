import {
  ReceiverCheckReportSchema,
  ReceiverCheckRequestSchema,
  ResponseCode,
  routeContract,
} from '@earshot/protocol'
import type { Static } from 'typebox'
import { EnterpriseParams } from '../enterprises/enterprise-contract.js'
import { WITH_BODY } from '../http/admin-refusals.js'
import type { Holds, Same } from '../http/answer-fields.js'
import type { ReceiverCheckReport } from './receiver-check.js'

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
