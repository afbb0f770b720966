import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { catalogueEntry, ResponseCode } from '@earshot/protocol'
import Fastify, {
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify'
import type { LogDestination, PlatformContext } from '../context.js'
import { ApiError } from './api-error.js'
import { ConnectionGuard } from './connection-guard.js'
import { installErrorHandling } from './error-handler.js'
import { requireUncompressedUtf8 } from './json-body.js'

/** Shared by both listeners: set when shutdown starts so new requests are refused with 5030. */
export interface Lifecycle {
  shuttingDown: boolean
}

/** A route a server registered: its method and URL pattern (`/admin/v1/deliveries/:deliveryId`). */
export interface RouteSummary {
  method: string
  url: string
}

const routesOf = new WeakMap<FastifyInstance, RouteSummary[]>()

/** Every route a server made by createServer registered, HEAD twins included (the documents' test). */
export function registeredRoutes(app: FastifyInstance): readonly RouteSummary[] {
  return routesOf.get(app) ?? []
}

export interface ListenerLimits {
  bodyLimit: number
  /** Seconds a whole request may take to arrive; its headers get no more than EARSHOT_REQUEST_TIMEOUT. */
  requestTimeoutSeconds: number
}

/**
 * A Fastify server as both listeners need it. Slow or idle clients are cut off: headers and a whole
 * request must arrive within their timeouts, an idle keep-alive connection closes, and connections are
 * capped in total and per client (connection-guard.ts). Refusals answer in the catalogue's
 * shape, those of requests that are not HTTP too, and a compressed body or a charset other than UTF-8
 * is refused (4150) before it is read.
 */
export function createServer(context: PlatformContext, limits: ListenerLimits): FastifyInstance {
  const { config } = context
  const requestTimeout = Math.round(limits.requestTimeoutSeconds * 1000)
  const headersTimeout = Math.min(Math.round(config.headersTimeoutSeconds * 1000), requestTimeout)
  const app = Fastify({
    logger: loggerOptions(config.logLevel, context.logDestination),
    bodyLimit: limits.bodyLimit,
    genReqId: () => randomUUID(),
    // Media links carry their grant in the path (media-links.ts).
    routerOptions: { maxParamLength: 1024 },
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    requestTimeout,
    keepAliveTimeout: Math.round(config.keepAliveTimeoutSeconds * 1000),
    // Node checks these timeouts every 30 s by default: every quarter of the shorter one instead, so
    // a request is cut at most 25% past its limit.
    http: {
      requestTimeout,
      headersTimeout,
      connectionsCheckingInterval: Math.max(1, Math.round(headersTimeout / 4)),
      // Node would answer a request without Host with an empty 400; requireHost answers it instead.
      requireHostHeader: false,
    },
    clientErrorHandler,
    // Errors of Fastify's router (a path it cannot decode, e.g. a request line holding a fragment, which
    // Node 22 and later let through) answer in the catalogue's shape too.
    frameworkErrors: (error, request, reply) => {
      const badUrl = error.code === 'FST_ERR_BAD_URL'
      const code = badUrl ? ResponseCode.INVALID_REQUEST : ResponseCode.INTERNAL_ERROR
      const msg = badUrl
        ? 'the request path is not a valid URL path (a fragment, or a bad percent-encoding): send the path alone'
        : 'internal error'
      if (!badUrl) request.log.error({ err: error }, 'unexpected router error')
      void (reply as FastifyReply)
        .code(catalogueEntry(code).httpStatus)
        .header('x-request-id', request.id)
        .send({ code, msg, requestId: request.id })
    },
  })
  const guard = new ConnectionGuard(app.server, {
    total: config.maxConnections,
    perClient: config.maxConnectionsPerClient,
  })
  app.addHook('onRequest', async (request, reply) => {
    const refused = guard.refused(request.raw.socket)
    if (!refused) return
    reply.header('connection', 'close')
    throw new ApiError(ResponseCode.UNAVAILABLE, REFUSALS[refused], { 'retry-after': '1' })
  })
  const routes: RouteSummary[] = []
  routesOf.set(app, routes)
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url })
  })
  installErrorHandling(app)
  app.addHook('preParsing', async (request) => {
    requireHost(request)
    requireUncompressedUtf8(request)
  })
  return app
}

const REFUSALS = {
  client:
    'too many connections from your address (EARSHOT_MAX_CONNECTIONS_PER_CLIENT): reuse open connections (keep-alive) or close some, then retry',
  total: 'the platform serves all the connections it can (EARSHOT_MAX_CONNECTIONS); retry shortly',
} as const

/** RFC 9112 §3.2: an HTTP/1.1 request without a Host header is refused (4000). */
function requireHost(request: FastifyRequest): void {
  if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
    throw new ApiError(ResponseCode.INVALID_REQUEST, 'an HTTP/1.1 request needs a Host header')
  }
}

/**
 * Answers what Node cannot parse as an HTTP request (a malformed request line or header, a bad
 * Content-Length, a broken chunk), which no route sees: 4000, or 4130 for headers over Node's 16 KiB,
 * in the catalogue's shape, then the connection is closed. As Node does, nothing is written when an
 * answer to an earlier request on the connection has begun. A request cut off by its timeout keeps
 * Fastify's 408. Logged at trace, as Fastify does (the raw packet is redacted).
 */
function clientErrorHandler(this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  this.log.trace({ err: error }, 'client error')
  const answering = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage
  if (socket.writable && !answering?.headersSent) {
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      const body = '{"error":"Request Timeout","message":"Client Timeout","statusCode":408}'
      socket.write(
        `HTTP/1.1 408 Request Timeout\r\nContent-Length: ${body.length}\r\nContent-Type: application/json\r\n\r\n${body}`,
      )
    } else {
      const tooLarge = error.code === 'HPE_HEADER_OVERFLOW'
      const code = tooLarge ? ResponseCode.PAYLOAD_TOO_LARGE : ResponseCode.INVALID_REQUEST
      const requestId = randomUUID()
      const body = JSON.stringify({
        code,
        msg: tooLarge ? 'the request headers are too large' : 'the request is not valid HTTP/1.1',
        requestId,
      })
      const status = catalogueEntry(code).httpStatus
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
      )
    }
  }
  socket.destroy(error)
}

/**
 * JSON logs (pino) on stderr — stdout is the CLI's — without secrets: request bodies are never
 * logged, nor query strings (an admin token sent in one would be written out with the URL), nor the
 * raw bytes of a malformed request (Fastify logs them at trace, Authorization header included), and
 * the headers that carry credentials are redacted should a serializer ever include them.
 */
function loggerOptions(
  level: PlatformContext['config']['logLevel'],
  stream: LogDestination,
): FastifyServerOptions['logger'] {
  return {
    level,
    stream,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'err.rawPacket'],
      censor: '[redacted]',
    },
    serializers: {
      req: (request: {
        method: string
        url: string
        host?: string
        ip?: string
        socket?: { remotePort?: number }
      }) => ({
        method: request.method,
        url: withoutQuery(request.url),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
    },
  }
}

function withoutQuery(url: string): string {
  const question = url.indexOf('?')
  return question < 0 ? url : `${url.slice(0, question)}?[redacted]`
}
