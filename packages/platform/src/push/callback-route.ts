import { CallbackPlaintext, CallbackPlaintextSchema, ResponseCode } from '@earshot/protocol'
import { batcher } from '@earshot/support/batcher'
import { authenticate, BEARER_REFUSALS } from '../auth/authenticate.js'
import type { PartnerEnv } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context.js'
import { ApiError } from '../http/api-error.js'
import type { RouteSpec } from '../http/route-spec.js'
import { confirmReceipts, type Receipt } from './receipts.js'
import { CHECK_AUDIO_ID_PREFIX, recordCheckCallback } from './receiver-check-store.js'

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
    const confirmReceipt = receiptBatcher(context)
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

const DEADLOCK_DETECTED = '40P01'

/**
 * Group commit of receipt callbacks: those in flight are recorded by one statement per turn of the event
 * loop, each answered once it has committed. One batch at a time, so that this instance's statements
 * never wait for each other.
 */
function receiptBatcher(context: PlatformContext): (receipt: Receipt) => Promise<boolean> {
  const { db } = context
  return batcher(
    async (receipts: Receipt[]) => {
      try {
        return await confirmReceipts(db, receipts)
      } catch (error) {
        // Locks are taken in one order, but another instance's concurrent ack or receipt of the same
        // recordings may still meet ours in a cycle; PostgreSQL then cancels one. Each alone cannot.
        if ((error as { code?: string }).code !== DEADLOCK_DETECTED || receipts.length === 1) throw error
        const results: boolean[] = []
        for (const receipt of receipts) results.push(...(await confirmReceipts(db, [receipt])))
        return results
      }
    },
    { maxBatch: 256 },
  )
}
