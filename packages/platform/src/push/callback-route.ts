import {
  CallbackPlaintext,
  CallbackPlaintextSchema,
  CHECK_AUDIO_ID_PREFIX,
  ResponseCode,
} from '@earshot/protocol'
import { authenticate, BEARER_REFUSALS } from '../auth/authenticate.js'
import type { PartnerEnv } from '../auth/envelope-request.js'
import { ApiError } from '../http/api-error.js'
import type { RouteSpec } from '../http/route-spec.js'
import { receiptBatcher } from './receipts.js'
import { recordCheckCallback } from './receiver-check-store.js'

/** POST /openapi/v1/callback: the partner confirms it has a recording; its acknowledged deliveries are confirmed. */
export const callbackRoute: RouteSpec<PartnerEnv> = {
  method: 'POST',
  path: '/openapi/v1/callback',
  operationId: 'confirmReceipt',
  tag: 'recordings',
  summary: 'Confirm the receipt of a pushed recording',
  description:
    'Confirms the deliveries of that audioId the partner has acknowledged. A repeated callback answers 2000 and changes nothing more. A deleted recording answers 2000 if the partner had it, else 4040.',
  body: { sealed: CallbackPlaintextSchema },
  answer: { description: 'Confirmed', payload: { result: null, sealed: false } },
  refusals: [...BEARER_REFUSALS, ResponseCode.NOT_FOUND],
  handle: ({ context, rateLimit }) => {
    const confirmReceipt = receiptBatcher(context.db)
    return async function callback(request, reply) {
      const opened = await authenticate(context, request, rateLimit)
      const { audioId } = CallbackPlaintext.parse(opened.plaintext)
      const ok = { code: ResponseCode.OK, msg: 'success', requestId: request.id }
      // A receiver check's push is called back like any other; the check records it, never as a receipt.
      // It waits for the check to have the push's answer, at most half a push's timeout.
      const checkWaitMs = (context.config.pushTimeoutSeconds * 1000) / 2
      if (
        audioId.startsWith(CHECK_AUDIO_ID_PREFIX) &&
        (await recordCheckCallback(context.db, opened.enterpriseId, audioId, checkWaitMs))
      )
        return reply.send(ok)
      if (!(await confirmReceipt({ enterpriseId: opened.enterpriseId, audioId }))) {
        throw new ApiError(
          ResponseCode.NOT_FOUND,
          `audioId ${JSON.stringify(audioId)} is not a recording of this enterprise`,
        )
      }
      return reply.send(ok)
    }
  },
}
