import {
  InvalidParameterError,
  isJsonObject,
  type JsonObject,
  type MessageParser,
  messageParser,
  RecordingFilter,
  ResponseCode,
  type SealedOperation,
} from '@earshot/protocol'
import { EarshotApiError, EarshotConfigError } from './errors.js'

/** setTimeout's limit (ms). */
export const MAX_TIMEOUT_MS = 2_147_483_647

/** The filter without undefined fields, checked as the platform would check it (4001 naming the field). */
export function checkFilter(filter: RecordingFilter): JsonObject {
  return checkMessage(RecordingFilter, withoutUndefined(filter))
}

export function withoutUndefined(value: unknown): unknown {
  return isJsonObject(value)
    ? Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined))
    : value
}

export function checkMessage(parser: MessageParser<unknown>, value: unknown): JsonObject {
  try {
    parser.parse(value)
  } catch (error) {
    if (!(error instanceof InvalidParameterError)) throw error
    throw new EarshotApiError({ code: ResponseCode.INVALID_PARAMETER, msg: error.message }, { cause: error })
  }
  return value as JsonObject
}

export function checkBaseUrl(baseUrl: unknown): string {
  if (typeof baseUrl !== 'string' || !URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new EarshotConfigError(
      `baseUrl must be an absolute http:// or https:// URL; got ${JSON.stringify(baseUrl)}`,
    )
  }
  return baseUrl.replace(/\/+$/, '')
}

export function checkPositiveInteger(name: string, value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1) {
    throw new EarshotConfigError(`${name} must be a positive integer; got ${JSON.stringify(value)}`)
  }
  return value as number
}

export function checkTimeout(timeoutMs: unknown): number {
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0 && timeoutMs <= MAX_TIMEOUT_MS)) {
    throw new EarshotConfigError(
      `timeoutMs must be a number of milliseconds from 1 to ${MAX_TIMEOUT_MS}; got ${String(timeoutMs)}`,
    )
  }
  return timeoutMs
}

export function checkFunction<T>(name: string, value: T | undefined): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new EarshotConfigError(`${name} must be a function when given`)
  }
  return value
}

type Schema = SealedOperation['plaintext']
const parsers = new WeakMap<Schema, MessageParser<unknown>>()

/** One parser per schema, compiled when first used. */
export function parserOf(schema: Schema): MessageParser<unknown> {
  const known = parsers.get(schema)
  if (known) return known
  const parser = messageParser(schema)
  parsers.set(schema, parser)
  return parser
}
