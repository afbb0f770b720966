import { catalogueEntry, httpStatusOf, ResponseCode, type ResponseCodeValue } from '@earshot/protocol'
import type { FastifyError, FastifyPluginAsync } from 'fastify'
import fastifyPlugin from 'fastify-plugin'
import { DEFAULT_PUSH_PATH, type PushAnswer, type PushRequest } from './push-exchange.js'

export interface PushReceiverPluginOptions {
  /** Where the platform POSTs pushes. Default /earshot/push. */
  path?: string
}

/**
 * The receiver as a Fastify plugin. The route lives in a scope of its own, where the body reaches the
 * receiver as raw bytes whatever its Content-Type (the receiver answers 4150 itself) and Fastify's
 * errors are answered in the catalogue's shape; the application's own parsers and error handler are
 * left as they were.
 */
export function createFastifyPlugin(
  handle: (request: PushRequest) => Promise<PushAnswer>,
  bodyLimit: number,
): FastifyPluginAsync<PushReceiverPluginOptions> {
  const plugin: FastifyPluginAsync<PushReceiverPluginOptions> = async (fastify, options) => {
    const path = options.path ?? DEFAULT_PUSH_PATH
    await fastify.register(async (scope) => {
      scope.removeAllContentTypeParsers()
      scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) =>
        done(null, body),
      )
      scope.setErrorHandler((error: FastifyError, _request, reply) => {
        const code = codeOfFastifyError(error)
        return reply.code(httpStatusOf(code)).send({
          code,
          msg: code === ResponseCode.INTERNAL_ERROR ? catalogueEntry(code).defaultMessage : error.message,
        })
      })
      scope.post(path, { bodyLimit }, async (request, reply) => {
        const body = request.body instanceof Uint8Array ? request.body : ''
        const answer = await handle({ body, headers: request.headers })
        reply.raw.once('finish', answer.afterResponse)
        return reply.code(answer.status).send(answer.body)
      })
    })
  }
  return fastifyPlugin(plugin, { fastify: '5.x' })
}

function codeOfFastifyError(error: FastifyError): ResponseCodeValue {
  switch (error.statusCode) {
    case 413:
      return ResponseCode.PAYLOAD_TOO_LARGE
    case 415:
      return ResponseCode.UNSUPPORTED_MEDIA_TYPE
    case 400:
      return ResponseCode.INVALID_REQUEST
    default:
      return ResponseCode.INTERNAL_ERROR
  }
}
