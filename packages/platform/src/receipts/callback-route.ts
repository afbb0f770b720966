import {
  CallbackPlaintext,
  CHECK_AUDIO_ID_PREFIX,
  confirmReceiptContract,
  InvalidParameterError,
  ResponseCode,
} from '@earshot/protocol'
import { authenticate } from '../auth/authenticate.js'
import type { PartnerEnv } from '../auth/envelope-request.js'
import type { PlatformContext } from '../context/platform-context.js'
import { receiptBatcher } from '../deliveries/delivery-receipts.js'
import { confirmErasure } from '../erasures/erasure-confirmations.js'
import { ApiError } from '../http/api-error.js'
import { replyResult } from '../http/partner-result.js'
import { defineRoute } from '../http/route-spec.js'
import { recordCheckCallback } from '../receiver-check/receiver-check-store.js'

/** POST /openapi/v1/callback: the partner confirms it has a recording; its acknowledged deliveries are confirmed. */
export const callbackRoute = defineRoute(
  confirmReceiptContract,
  ({ context, rateLimit }: PartnerEnv<PlatformContext>) => {
    const confirmReceipt = receiptBatcher(context.db)
    return async function callback(request, reply) {
      const opened = await authenticate(context, request, rateLimit)
      const { audioId, erased } = CallbackPlaintext.parse(opened.plaintext)
      // A receiver check's push is called back like any other; the check records it, never as a receipt.
      // It waits for the check to have the push's answer, at most half a push's timeout.
      const checkWaitMs = (context.config.pushTimeoutSeconds * 1000) / 2
      if (
        audioId.startsWith(CHECK_AUDIO_ID_PREFIX) &&
        (await recordCheckCallback(context.db, opened.enterpriseId, audioId, checkWaitMs))
      )
        return replyResult(request, reply)
      if (erased === true) {
        await recordErasure(context, opened.enterpriseId, audioId)
        return replyResult(request, reply)
      }
      if (!(await confirmReceipt({ enterpriseId: opened.enterpriseId, audioId }))) {
        throw new ApiError(
          ResponseCode.NOT_FOUND,
          `audioId ${JSON.stringify(audioId)} is not a recording of this enterprise`,
        )
      }
      return replyResult(request, reply)
    }
  },
)

/** A partner's erasure confirmation: recorded, or refused with what to check. */
async function recordErasure(context: PlatformContext, enterpriseId: number, audioId: string): Promise<void> {
  const outcome = await confirmErasure(context.db, enterpriseId, audioId)
  if (outcome === 'not-deleted') {
    throw new InvalidParameterError(
      'erased',
      `recording ${JSON.stringify(audioId)} is not deleted: confirm an erasure only after its recording.deleted push`,
    )
  }
  if (outcome === 'never-had') {
    throw new ApiError(
      ResponseCode.NOT_FOUND,
      `audioId ${JSON.stringify(audioId)} is not a recording this enterprise received: nothing of it was yours to erase`,
    )
  }
}
