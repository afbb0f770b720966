import type { ResponseCodeValue } from '@earshot/protocol'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TObject, TSchema } from 'typebox'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** A schema as JSON Schema, or one already written as such (a $ref, a string). */
export type Schema = TSchema | Record<string, unknown>

/**
 * What a request or an answer carries:
 * - `json`: a JSON body of this schema;
 * - `lines`: a stream of JSON Lines, each of this schema, as one of `types`;
 * - `text`: plain text of this content type;
 * - `binary`: raw bytes of one of these content types (`audio/*`), streamed;
 * - `sealed`: an envelope whose ciphertext holds this schema (a request's is sent with a bearer token,
 *   unless `bare`);
 * - `result`: a partner answer `{code, msg, requestId, data}`, data this schema (none when null),
 *   sealed or in the clear.
 */
export type Payload =
  | { json: Schema }
  | { lines: TSchema; types: readonly string[] }
  | { text: string }
  | { binary: readonly string[] }
  | { sealed: TSchema; bare?: boolean }
  | { result: TSchema | null; sealed: boolean }

export interface Answer {
  status?: 200 | 201
  description: string
  /** None for an answer whose body nobody reads. */
  payload?: Payload
}

export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>

/**
 * A route as data: what it is (method, path, schemas, the refusals it can give) for the listener that
 * mounts it and for the OpenAPI document made from it, and how it is handled. `handle` is called once
 * per listener with what the listener hands its routes, so a route may keep state of its own (a batcher).
 */
export interface RouteSpec<Env> {
  method: Method
  /** Fastify's form: `:name` for a path parameter, each described in `params`. */
  path: string
  operationId: string
  tag: string
  summary: string
  description?: string
  /** Served without credentials. */
  open?: boolean
  /** A GET whose handler answers HEAD itself (else Fastify's HEAD reads the whole answer and drops it). */
  head?: boolean
  params?: TObject
  query?: TObject
  body?: Payload
  answer: Answer
  /** Answers by HTTP status (or `default`) beyond the success and the catalogue's refusals. */
  otherAnswers?: Record<string, Omit<Answer, 'status'>>
  /** The catalogue codes it may refuse with, beyond those its listener gives every route. */
  refusals: readonly ResponseCodeValue[]
  handle(env: Env): Handler
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

/** Every refusal's body, `{code, msg, requestId}`, as the documents name it. */
export const ERROR_BODY = { $ref: '#/components/schemas/ErrorBody' }

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
