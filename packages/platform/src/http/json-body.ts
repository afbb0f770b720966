import { ResponseCode } from '@earshot/protocol'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from './api-error.js'

/** Refuses a body that is not declared application/json. */
export function requireJsonContentType(request: FastifyRequest): void {
  const mediaType = request.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase()
  if (mediaType !== 'application/json') {
    throw new ApiError(
      ResponseCode.UNSUPPORTED_MEDIA_TYPE,
      `Content-Type must be application/json; got ${mediaType ? JSON.stringify(mediaType) : 'none'}`,
    )
  }
}

/**
 * Refuses a body the platform would misread: compressed (any Content-Encoding but identity; bodies are
 * never inflated) or declared in a charset other than UTF-8 (they are decoded as UTF-8, strictly).
 */
export function requireUncompressedUtf8(request: FastifyRequest): void {
  const encoding = request.headers['content-encoding']
  if (encoding?.split(',').some((coding) => coding.trim().toLowerCase() !== 'identity')) {
    throw new ApiError(
      ResponseCode.UNSUPPORTED_MEDIA_TYPE,
      `Content-Encoding ${JSON.stringify(encoding)} is not supported; send the body uncompressed`,
    )
  }
  const charset = charsetOf(request.headers['content-type'])
  if (charset !== undefined && charset !== 'utf-8') {
    throw new ApiError(
      ResponseCode.UNSUPPORTED_MEDIA_TYPE,
      `charset must be utf-8; got ${JSON.stringify(charset)}`,
    )
  }
}

/** The charset parameter of a Content-Type, lower-cased and unquoted; undefined when there is none. */
function charsetOf(contentType: string | undefined): string | undefined {
  for (const parameter of contentType?.split(';').slice(1) ?? []) {
    const equals = parameter.indexOf('=')
    if (equals >= 0 && parameter.slice(0, equals).trim().toLowerCase() === 'charset') {
      return parameter
        .slice(equals + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1')
        .toLowerCase()
    }
  }
  return undefined
}

/** Fatal: invalid UTF-8 is refused, never replaced by U+FFFD. The BOM is left to the JSON parser. */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * Reads JSON bodies as bytes and decodes them strictly. Fastify's own parser decodes leniently, so a
 * string holding invalid UTF-8 (an eventId, say) would arrive with U+FFFD in it and be accepted;
 * here the body is refused with 4000 instead. The parsing itself is Fastify's (same limits, same
 * prototype-poisoning protection).
 */
export function parseJsonStrictly(app: FastifyInstance): void {
  const { onProtoPoisoning, onConstructorPoisoning } = app.initialConfig
  const parseJson = app.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string
    try {
      text = utf8.decode(body as Buffer)
    } catch {
      done(new ApiError(ResponseCode.INVALID_REQUEST, 'the body is not valid UTF-8'), undefined)
      return
    }
    parseJson(request, text, done)
  })
}
