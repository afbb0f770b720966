import type { Static, TSchema } from 'typebox'
import { Compile, type Validator } from 'typebox/compile'
import { InvalidParameterError } from './errors.js'
import { ISO_INSTANT_PATTERN, ISO_INSTANT_RULE, parseInstantMicros } from './time.js'

/*
 * How a message is checked: against its schema (messages.ts), the first problem answered as an
 * InvalidParameterError naming the field, in the contract's words (a schema's RULE, the unknown-field rule).
 */

/** Text that storage can hold: any character but U+0000. */
export const NO_NUL_PATTERN = '^[^\\u0000]*$'

/**
 * Annotations that word a schema's refusals for people, kept in the schema so that its published
 * description (OpenAPI allows x- extensions in a schema) states the same rules. On a field's schema,
 * RULE is the rule stated when the field breaks any of its keywords (its `required` aside); on an
 * object's, UNKNOWN_FIELD_RULE is the rule stated for a field the object does not have.
 */
export const RULE = 'x-earshot-rule'
export const UNKNOWN_FIELD_RULE = 'x-earshot-unknown-field'

export interface MessageParser<T> {
  readonly schema: TSchema
  /** Returns the value typed, or throws InvalidParameterError naming the first field that breaks its rule. */
  parse(value: unknown): T
}

/**
 * Compiles a schema into a parser whose refusals are InvalidParameterError naming the field; `check`
 * adds the rules JSON Schema cannot say (cross-field, calendar). Shared with the platform and kit. The
 * schema is compiled when first parsed: a process (a CLI command) pays only for the messages it reads.
 */
export function messageParser<S extends TSchema>(
  schema: S,
  check?: (value: Static<S>) => void,
): MessageParser<Static<S>> {
  let compiled: ReturnType<typeof Compile<S>> | undefined
  return {
    schema,
    parse(value) {
      compiled ??= Compile(schema)
      if (!compiled.Check(value)) throw firstError(schema, compiled, value)
      check?.(value)
      return value as Static<S>
    },
  }
}

function firstError(schema: TSchema, validator: Validator, value: unknown): InvalidParameterError {
  const [error] = validator.Errors(value).filter((e) => e.keyword !== 'boolean')
  if (!error) return new InvalidParameterError('', 'the message does not match its schema')
  const at = error.instancePath
  const params = error.params as {
    requiredProperties?: string[]
    additionalProperties?: string[]
    pattern?: string
  }
  if (error.keyword === 'required' && params.requiredProperties?.[0]) {
    return new InvalidParameterError(fieldName(`${at}/${params.requiredProperties[0]}`), 'is required')
  }
  const [failing, ...around] = schemasAlong(schema, error.schemaPath)
  if (error.keyword === 'additionalProperties' && params.additionalProperties?.[0]) {
    const rule = failing?.[UNKNOWN_FIELD_RULE]
    return new InvalidParameterError(
      fieldName(`${at}/${params.additionalProperties[0]}`),
      typeof rule === 'string' ? rule : 'is not a known field',
    )
  }
  const rule = [failing, ...around].find((each) => typeof each?.[RULE] === 'string')?.[RULE]
  if (typeof rule === 'string') return new InvalidParameterError(fieldName(at), rule)
  if (error.keyword === 'pattern' && params.pattern === ISO_INSTANT_PATTERN) {
    return new InvalidParameterError(fieldName(at), ISO_INSTANT_RULE)
  }
  if (error.keyword === 'pattern' && params.pattern === NO_NUL_PATTERN) {
    return new InvalidParameterError(fieldName(at), 'must not contain the character U+0000')
  }
  return new InvalidParameterError(fieldName(at), error.message)
}

/** Keywords holding named or numbered subschemas; the others that hold a schema hold one. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'dependentSchemas', '$defs', 'prefixItems'])
const BRANCHES = new Set(['anyOf', 'oneOf', 'allOf'])

/**
 * The schema at a schema path ('#/properties/u/anyOf/0'), then those it is a branch of (anyOf, oneOf,
 * allOf) up to the schema of the field itself: the schemas whose rule a refusal there may state.
 */
function schemasAlong(root: TSchema, schemaPath: string): Record<string, unknown>[] {
  const steps = schemaPath
    .split('/')
    .slice(1)
    .map((step) => step.replaceAll('~1', '/').replaceAll('~0', '~'))
  const along: { schema: Record<string, unknown>; via?: string }[] = [
    { schema: root as Record<string, unknown> },
  ]
  for (let index = 0; index < steps.length; ) {
    const keyword = steps[index] as string
    const holder = along.at(-1)?.schema[keyword] as Record<string, unknown> | undefined
    const container = SCHEMA_MAPS.has(keyword) || BRANCHES.has(keyword)
    const next = container ? holder?.[steps[index + 1] as string] : holder
    if (typeof next !== 'object' || next === null) return []
    along.push({ schema: next as Record<string, unknown>, via: keyword })
    index += container ? 2 : 1
  }
  const schemas: Record<string, unknown>[] = []
  for (let index = along.length - 1; index >= 0; index--) {
    const { schema, via } = along[index] as (typeof along)[number]
    schemas.push(schema)
    if (!via || !BRANCHES.has(via)) break
  }
  return schemas
}

/** '/items/0/data/title' → 'items[0].data.title' */
function fieldName(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((name, part) => (/^\d+$/.test(part) ? `${name}[${part}]` : name ? `${name}.${part}` : part), '')
}

/**
 * Checks an optional ISO-8601 instant field (explicit offset, real date, at most microseconds) and
 * returns its epoch microseconds, exact, for comparing it with another.
 */
export function checkInstant(field: string, text: string | undefined): bigint | undefined {
  if (text === undefined) return undefined
  const instant = parseInstantMicros(text)
  if (instant === undefined) throw new InvalidParameterError(field, ISO_INSTANT_RULE)
  return instant
}
