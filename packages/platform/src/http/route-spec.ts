import type { Answer, JsonAnswerOf, Payload, RouteContract } from '@earshot/protocol'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Static, TObject, TSchema } from 'typebox'
import type { NoBodyOfItsOwn, ResultReply } from './partner-result.js'

export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>

/**
 * What a contract's handler answers with, checked: its JSON (or text) answer; a partner result as
 * replyResult or replySealed sent it, its data of the result's schema and sealed as the contract says;
 * anything for what it streams.
 */
export type AnswerOf<C extends RouteContract> = C['answer']['payload'] extends
  | { json: unknown }
  | { text: string }
  ? JsonAnswerOf<C>
  : C['answer']['payload'] extends { result: infer S; sealed: infer Sealed extends boolean }
    ? ResultReply<S extends TSchema ? Static<S> : undefined, Sealed>
    : unknown

/**
 * What a handler may send on the reply itself, checked too: its JSON answer, unless it documents other
 * answers (it sends those); nothing for a partner result (replyResult or replySealed sends it); anything
 * where it answers by streaming or with bytes.
 */
type ReplyBodyOf<C extends RouteContract> = C extends { otherAnswers: object }
  ? unknown
  : C['answer']['payload'] extends { json: unknown }
    ? JsonAnswerOf<C>
    : C['answer']['payload'] extends { result: unknown }
      ? NoBodyOfItsOwn
      : unknown

/**
 * A handler of this contract. An answer returned is sent with the contract's status; one sent on the reply
 * (a stream, bytes, an envelope, another answer) resolves as the reply does, after the send.
 */
export type TypedHandler<C extends RouteContract> = (
  request: FastifyRequest,
  reply: FastifyReply<{ Reply: ReplyBodyOf<C> }>,
) => Promise<AnswerOf<C>>

/**
 * A route as data: its contract (what it is, for the listener that mounts it, the OpenAPI document made
 * from it and the admin client), and how it is handled. `handle` is called once per listener with what the
 * listener hands its routes, so a route may keep state of its own (a batcher).
 */
export type RouteSpec<Env> = RouteContract & { handle(env: Env): Handler }

/**
 * A route from its contract and its handler, which must answer what the contract's answer schema says.
 * A success other than 200 (201) is answered with the contract's status.
 */
export function defineRoute<Env, const C extends RouteContract>(
  contract: C,
  handle: (env: Env) => TypedHandler<C>,
): RouteSpec<Env> {
  const status = contract.answer.status
  if (status === undefined || status === 200) return { ...contract, handle: handle as (env: Env) => Handler }
  return {
    ...contract,
    handle(env) {
      const handler = handle(env) as Handler
      return async function answerWithStatus(request, reply) {
        const answer = await handler(request, reply)
        if (answer !== reply) reply.code(status)
        return answer
      }
    },
  }
}

/** A request the platform sends (a push), described as the routes are. */
export interface WebhookSpec {
  name: string
  operationId: string
  summary: string
  description: string
  headers: TObject
  body: Payload
  answer: Answer
  otherAnswers: Record<string, Omit<Answer, 'status'>>
}

/** Mounts routes on a listener, each handed `env`. */
export function mountRoutes<Env>(app: FastifyInstance, routes: readonly RouteSpec<Env>[], env: Env): void {
  for (const route of routes) {
    const method = route.head ? [route.method, 'HEAD'] : route.method
    app.route({ method, url: route.path, handler: route.handle(env) })
  }
}

/** The OpenAPI form of a route's path: `{name}` for `:name`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z]\w*)/g, '{$1}')
}
