import type { Static, TObject, TSchema } from 'typebox'
import type { ResponseCodeValue } from './error-catalogue.js'

/*
 * What an HTTP route is, without how it is handled: the platform mounts it with a handler, its OpenAPI
 * documents are made from it, and clients call it by operationId, typed by its schemas. Types and data only.
 */

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
  /** 302, 303: a redirect a browser follows (single sign-on, entering the portal), its Location the answer. */
  status?: 200 | 201 | 302 | 303
  description: string
  /** None for an answer whose body nobody reads. */
  payload?: Payload
}

export interface RouteContract {
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
  /** What an operator will need to be allowed to call it; the platform's admin routes only. */
  permission?: string
}

/** Every refusal's body, `{code, msg, requestId}`, as the documents name it. */
export const ERROR_BODY = { $ref: '#/components/schemas/ErrorBody' }

/** Declares a route's contract, keeping its literal operationId and its schemas' own types. */
export function routeContract<const C extends RouteContract>(contract: C): C {
  return contract
}

/** The value a JSON payload of this schema carries (unknown for a schema written as plain JSON Schema). */
export type JsonOf<S> = S extends TSchema ? Static<S> : unknown

/** What the success of a contract answers, as JSON or text; undefined for what is read another way. */
export type JsonAnswerOf<C extends RouteContract> = C['answer']['payload'] extends infer P
  ? P extends { json: infer S }
    ? JsonOf<S>
    : P extends { text: string }
      ? string
      : undefined
  : never

/** The JSON body a contract takes; undefined for one that takes none or takes bytes, lines or an envelope. */
export type JsonBodyOf<C extends RouteContract> = C['body'] extends { json: infer S } ? JsonOf<S> : undefined

/** The path parameters a contract names, as a caller gives them. */
export type ParamsOf<C extends RouteContract> = C['params'] extends TObject ? Static<C['params']> : undefined

/** The query a contract reads: each parameter by name, sent as text. */
export type QueryOf<C extends RouteContract> = C['query'] extends TObject
  ? { [Name in keyof Static<C['query']>]?: string | number | boolean | undefined }
  : undefined
