import type { Answer, Payload, RouteContract, Schema } from '@earshot/protocol'
import { ResponseCode, type ResponseCodeValue } from '@earshot/protocol'
import type { TObject, TSchema } from 'typebox'
import { openApiPath, type WebhookSpec } from '../http/route-spec.js'
import { type Components, type Json, PERMISSION, refusals } from './openapi.js'

/** How one listener's document is made from its routes. */
export interface DocumentStyle {
  components: Components
  /** The security scheme every route but the open ones needs. */
  securityScheme: string
  /** The scheme a route needs instead, if not that one (the portal's routes: its session cookie). */
  securityOf?(route: RouteContract): string | undefined
  /** Refusals every route (open ones too) may give, beyond its own. */
  everyRoute: readonly ResponseCodeValue[]
  /** The permission open routes are documented with (the admin API's "public"); none when absent. */
  openPermission?: string
  /** The envelope component whose ciphertext holds `plaintext`: one sent with a bearer token, or not. */
  sealed?(plaintext: TSchema, bearer: boolean): Json
}

/** The OpenAPI paths of a listener's routes: each operation with its parameters, bodies and refusals. */
export function documentPaths(routes: readonly RouteContract[], style: DocumentStyle): Json {
  const paths: Record<string, Json> = {}
  for (const route of routes) {
    const path = openApiPath(route.path)
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation(route, style) }
  }
  return paths
}

/** The OpenAPI webhooks: what the platform sends, and what it takes as an answer. */
export function documentWebhooks(webhooks: readonly WebhookSpec[], style: DocumentStyle): Json {
  return Object.fromEntries(
    webhooks.map((webhook) => [
      webhook.name,
      {
        post: {
          operationId: webhook.operationId,
          summary: webhook.summary,
          description: webhook.description,
          parameters: parametersOf(webhook.headers, 'header', style),
          requestBody: { required: true, content: content(webhook.body, 'request', style) },
          responses: answers(webhook.answer, webhook.otherAnswers, style),
        },
      },
    ]),
  )
}

function operation(route: RouteContract, style: DocumentStyle): Json {
  const parameters = [
    ...parametersOf(route.params, 'path', style),
    ...parametersOf(route.query, 'query', style),
  ]
  const codes = [...new Set([...route.refusals, ...style.everyRoute])].sort((a, b) => a - b)
  return {
    operationId: route.operationId,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description && { description: route.description }),
    security: route.open ? [] : [{ [style.securityOf?.(route) ?? style.securityScheme]: [] }],
    ...(route.permission && { [PERMISSION]: route.permission }),
    ...(route.open && style.openPermission && { [PERMISSION]: style.openPermission }),
    ...(parameters.length > 0 && { parameters }),
    ...(route.body && { requestBody: { required: true, content: content(route.body, 'request', style) } }),
    responses: {
      ...answers(route.answer, {}, style),
      ...refusals(codes),
      ...answers(undefined, route.otherAnswers ?? {}, style),
    },
  }
}

function answers(
  success: Answer | undefined,
  others: Record<string, Omit<Answer, 'status'>>,
  style: DocumentStyle,
): Json {
  const all = success ? { [String(success.status ?? 200)]: success, ...others } : others
  return Object.fromEntries(
    Object.entries(all).map(([status, { description, payload }]) => [
      status,
      { description, ...(payload && { content: content(payload, 'answer', style) }) },
    ]),
  )
}

function parametersOf(
  schema: TObject | undefined,
  where: 'path' | 'query' | 'header',
  style: DocumentStyle,
): Json[] {
  if (!schema) return []
  const required = new Set(schema.required ?? [])
  return Object.entries(schema.properties).map(([name, property]) => {
    const { description, ...rest } = style.components.emit(property) as Json
    return { name, in: where, required: where === 'path' || required.has(name), description, schema: rest }
  })
}

/** A payload as OpenAPI media types. */
function content(payload: Payload, as: 'request' | 'answer', style: DocumentStyle): Json {
  const emit = (schema: Schema) => style.components.emit(schema)
  if ('json' in payload) return { 'application/json': { schema: emit(payload.json) } }
  if ('text' in payload) return { [payload.text]: { schema: { type: 'string' } } }
  if ('binary' in payload) {
    return Object.fromEntries(
      payload.binary.map((type) => [type, { schema: { type: 'string', format: 'binary' } }]),
    )
  }
  if ('lines' in payload) {
    const line = emit(payload.lines).$ref as string
    const description = `one ${line.split('/').at(-1)} per line`
    return Object.fromEntries(
      payload.types.map((type) => [
        type,
        { schema: { type: 'string', description }, 'x-earshot-line-schema': line },
      ]),
    )
  }
  if ('result' in payload) {
    const { result, sealed } = payload
    const data = result && (sealed ? sealedEnvelope(result, false, style) : emit(result))
    return { 'application/json': { schema: partnerAnswer(data) } }
  }
  const bearer = as === 'request' && !payload.bare
  return { 'application/json': { schema: sealedEnvelope(payload.sealed, bearer, style) } }
}

function sealedEnvelope(plaintext: TSchema, bearer: boolean, style: DocumentStyle): Json {
  if (!style.sealed) throw new Error('this document has no sealed payloads')
  return style.sealed(plaintext, bearer)
}

/** A partner API success: `{code: 2000, msg: "success", requestId}` and the data, if any. */
function partnerAnswer(data: Json | null): Json {
  return {
    type: 'object',
    required: ['code', 'msg', 'requestId', ...(data ? ['data'] : [])],
    properties: {
      code: { type: 'integer', const: ResponseCode.OK },
      msg: { type: 'string', const: 'success' },
      requestId: { type: 'string' },
      ...(data && { data }),
    },
  }
}
