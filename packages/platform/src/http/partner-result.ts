import { ResponseCode } from '@earshot/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'

declare const answered: unique symbol
declare const sentByHelper: unique symbol

/** What a result route's handler may send on the reply itself: nothing it can make (replyResult, replySealed). */
export interface NoBodyOfItsOwn {
  readonly [sentByHelper]: never
}

/**
 * A partner API success sent on the reply, `{code: 2000, msg, requestId, data}`: the reply itself, typed to
 * keep the data's type and whether it went sealed, so that the route's contract checks what its handler
 * answered (route-spec.ts, AnswerOf). Not typed a FastifyReply: that is a thenable whose awaited type is
 * never, which an async handler's answer would match whatever its contract.
 */
export interface ResultReply<Data, Sealed extends boolean> {
  readonly [answered]: { data: Data; sealed: Sealed }
}

/**
 * Answers 2000 with `data` in the clear, or without data where the contract's result is null. `Data` is the
 * type the route's contract asks for (the handler's answer), not read from the value, which is checked
 * against it.
 */
export function replyResult<Data = undefined>(
  request: FastifyRequest,
  reply: FastifyReply,
  ...[data]: undefined extends Data ? [] : [data: NoInfer<Data>]
): ResultReply<Data, false> {
  return sendResult(request, reply, data) as unknown as ResultReply<Data, false>
}

/** Sends `{code: 2000, msg: 'success', requestId}`, and `data` unless it is undefined. */
export function sendResult(request: FastifyRequest, reply: FastifyReply, data: unknown): FastifyReply {
  return reply.send({
    code: ResponseCode.OK,
    msg: 'success',
    requestId: request.id,
    ...(data !== undefined && { data }),
  })
}
