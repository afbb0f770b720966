import { type ComponentNote, componentOf, errorCatalogue, type ResponseCodeValue } from '@earshot/protocol'
import type { TSchema } from 'typebox'

/*
 * The pieces both OpenAPI 3.1 documents are made of. Schemas are the TypeBox schemas the code validates
 * and answers with, emitted as plain JSON Schema 2020-12 (OpenAPI 3.1's dialect); a schema given a name
 * is emitted once under components.schemas and referred to wherever it occurs. The schemas named are those
 * that declare themselves components (component() in @earshot/protocol), found in the routes' contracts.
 */

export type Json = Record<string, unknown>

/** On an operation: the permission an operator will need to call it (http/permissions.ts). */
export const PERMISSION = 'x-earshot-permission'

export const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` })

export class Components {
  readonly #named: { name: string; schema: TSchema | Json; annotations: Json }[] = []
  readonly #byJson = new Map<string, string>()

  /** Names a schema: it becomes components.schemas[name], and a $ref wherever else it occurs. */
  name(name: string, schema: TSchema | Json, annotations: Json = {}): Json {
    this.#named.push({ name, schema, annotations })
    this.#byJson.set(JSON.stringify(schema), name)
    return ref(name)
  }

  /** The name a schema was given, if any. */
  nameOf(schema: TSchema | Json): string | undefined {
    return this.#byJson.get(JSON.stringify(schema))
  }

  /** A schema as plain JSON Schema (TypeBox's own markers dropped), named schemas as $refs. */
  emit(schema: TSchema | Json): Json {
    return this.#replace(JSON.parse(JSON.stringify(schema)), false) as Json
  }

  schemas(): Record<string, Json> {
    return Object.fromEntries(
      this.#named.map(({ name, schema, annotations }) => [
        name,
        { ...(this.#replace(JSON.parse(JSON.stringify(schema)), true) as Json), ...annotations },
      ]),
    )
  }

  #replace(node: unknown, root: boolean): unknown {
    if (Array.isArray(node)) return node.map((each) => this.#replace(each, false))
    if (typeof node !== 'object' || node === null) return node
    const name = root ? undefined : this.#byJson.get(JSON.stringify(node))
    if (name) return ref(name)
    return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, this.#replace(value, false)]))
  }
}

/** A schema that declares itself a component, and its note: its name, what it is. */
export interface DeclaredComponent {
  schema: TSchema
  note: ComponentNote
}

/**
 * The schemas declared components anywhere within these values (route contracts, webhooks), each once, in
 * the order met: a component after the components it holds, an envelope's plaintext after the envelope.
 */
export function declaredComponents(within: readonly unknown[]): DeclaredComponent[] {
  const found = new Map<string, DeclaredComponent & { json: string }>()
  const visited = new Set<object>()
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null || visited.has(node)) return
    visited.add(node)
    for (const value of Object.values(node)) visit(value)
    const note = componentOf(node)
    if (!note) return
    const json = JSON.stringify(node)
    const known = found.get(note.name)
    if (known && known.json !== json)
      throw new Error(`two different schemas declare the component ${note.name}`)
    if (!known) found.set(note.name, { schema: node as TSchema, note, json })
    visit(note.plaintext)
  }
  for (const value of within) visit(value)
  return [...found.values()].map(({ schema, note }) => ({ schema, note }))
}

/**
 * The error catalogue (packages/protocol/src/error-catalogue.ts) as one integer schema: a oneOf of
 * consts, each titled with its name and saying when it is answered and with which HTTP status.
 */
export function responseCodeSchema(): Json {
  const entries = [...errorCatalogue.values()]
  const table = entries.map(
    (entry) => `| ${entry.code} | ${entry.name} | ${entry.httpStatus} | ${entry.when} |`,
  )
  return {
    type: 'integer',
    description: [
      'Every answer carries one of these codes; the HTTP status is the code / 10, rounded down.',
      '',
      '| code | name | HTTP status | when |',
      '|---|---|---|---|',
      ...table,
    ].join('\n'),
    oneOf: entries.map((entry) => ({
      const: entry.code,
      title: entry.name,
      description: `${entry.when} (HTTP ${entry.httpStatus})`,
      'x-earshot-http-status': entry.httpStatus,
    })),
  }
}

/** Every refusal's body: {code, msg, requestId}. */
export function errorBodySchema(): Json {
  return {
    type: 'object',
    required: ['code', 'msg', 'requestId'],
    properties: {
      code: ref('ResponseCode'),
      msg: { type: 'string', description: 'what was refused and why; a refused field is named first' },
      requestId: { type: 'string', description: 'also sent as the X-Request-Id header' },
    },
  }
}

/** The refusals an operation may answer, one response per HTTP status, naming the codes behind it. */
export function refusals(codes: readonly ResponseCodeValue[]): Record<string, Json> {
  const byStatus = new Map<number, ResponseCodeValue[]>()
  for (const code of codes) {
    const { httpStatus } = errorCatalogue.get(code) as { httpStatus: number }
    byStatus.set(httpStatus, [...(byStatus.get(httpStatus) ?? []), code])
  }
  return Object.fromEntries(
    [...byStatus].map(([status, grouped]) => [
      String(status),
      {
        description: grouped
          .map((code) => {
            const entry = errorCatalogue.get(code) as { name: string; when: string }
            return `${code} ${entry.name}: ${entry.when}`
          })
          .join('; '),
        ...(status === 429 && {
          headers: { 'Retry-After': { description: 'seconds to wait', schema: { type: 'integer' } } },
        }),
        content: { 'application/json': { schema: ref('ErrorBody') } },
      },
    ]),
  )
}
