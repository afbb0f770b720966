import { randomUUID } from 'node:crypto'
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { catalogueEntry, ResponseCode, type ResponseCodeValue } from '@earshot/protocol'
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from 'fastify'
import type { PlatformConfig } from '../config/config.js'
import { ApiError } from './api-error.js'
import { ConnectionGuard } from './connection-guard.js'
import { installErrorHandling, markTimedOut, noteRefusal, refusalOf } from './error-handler.js'
import { requireUncompressedUtf8 } from './json-body.js'
import type { LogDestination } from './log-destination.js'
import { loggedPath, redactSecrets } from './log-redaction.js'
import { watchWrites } from './write-watchdog.js'

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
 * request must arrive within their timeouts (else 4080), an idle keep-alive connection closes, and
 * connections are capped in total and per client (connection-guard.ts). Every answer is in the
 * catalogue's shape, those to requests that are not HTTP or that time out too, and a compressed body
 * or a charset other than UTF-8 is refused (4150) before it is read. An answer its reader stops taking
 * is cut after EARSHOT_WRITE_TIMEOUT (write-watchdog.ts). Each request is logged once, when
 * it is answered (RequestLog).
 */
/** What a server is built from: the configuration and where its log lines go. */
export interface ServerEnv {
  config: PlatformConfig
  logDestination: LogDestination
}

export function createServer(context: ServerEnv, limits: ListenerLimits): FastifyInstance {
  const { config } = context
  const requestTimeout = Math.round(limits.requestTimeoutSeconds * 1000)
  const headersTimeout = Math.min(Math.round(config.headersTimeoutSeconds * 1000), requestTimeout)
  /** The request each response in progress answers: a timeout's 4080 carries its requestId. */
  const requestOf = new WeakMap<ServerResponse, FastifyRequest>()
  const app = Fastify({
    logger: loggerOptions(config.logLevel, context.logDestination),
    logController: new RequestLog(),
    bodyLimit: limits.bodyLimit,
    genReqId: () => randomUUID(),
    // Media links carry their grant in the path (media-links.ts).
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
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
    clientErrorHandler: clientErrorHandler(timeoutMessage(headersTimeout, requestTimeout), requestOf),
    frameworkErrors: answerRouterError,
  })
  const guard = new ConnectionGuard(app.server, {
    total: config.maxConnections,
    perClient: config.maxConnectionsPerClient,
  })
  watchWrites(
    app.server,
    { timeoutMs: config.writeTimeoutSeconds * 1000, minBytesPerSecond: config.minSendRateBytes },
    (response) => {
      const log = requestOf.get(response)?.log ?? app.log
      log.info(
        { remoteAddress: response.socket?.remoteAddress },
        'reader too slow (EARSHOT_WRITE_TIMEOUT, EARSHOT_MIN_SEND_RATE): connection closed',
      )
    },
  )
  answerWhatNodeWould(app)
  // Hooks that do not wait take Fastify's callback, which spares every request a promise.
  app.addHook('onRequest', (request, reply, done) => {
    requestOf.set(reply.raw, request)
    const refused = guard.refused(request.raw.socket)
    if (!refused) return done()
    reply.header('connection', 'close')
    done(new ApiError(ResponseCode.UNAVAILABLE, REFUSALS[refused], { 'retry-after': '1' }))
  })
  const routes: RouteSummary[] = []
  routesOf.set(app, routes)
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push({ method, url: route.url })
  })
  installErrorHandling(app)
  // Node would answer Expect: 100-continue as soon as the headers are in; it is answered when the body is
  // about to be read instead, so that a request refused before (a declared length over a limit, a missing
  // token) is never sent its body, and the client reads the refusal instead of a broken pipe.
  app.server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) =>
    app.server.emit('request', request, response),
  )
  app.addHook('preParsing', (request, reply, payload, done) => {
    try {
      requireHost(request)
      requireUncompressedUtf8(request)
      if (request.headers.expect?.toLowerCase() === '100-continue') reply.raw.writeContinue()
      done(null, payload)
    } catch (error) {
      done(error as Error, payload)
    }
  })
  return app
}

/** The longest path parameter routed; a longer one is refused with 4140. */
export const MAX_PARAM_LENGTH = 1024

/**
 * Errors of Fastify's router answer in the catalogue's shape too: a path it cannot decode (a request line
 * holding a fragment, which Node 22 and later let through) with 4000, a path parameter over
 * MAX_PARAM_LENGTH with 4140. The request's line gives the path's parts over that limit by their length.
 */
function answerRouterError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  let code: ResponseCodeValue = ResponseCode.INTERNAL_ERROR
  let msg = 'internal error'
  if (error.code === 'FST_ERR_BAD_URL') {
    code = ResponseCode.INVALID_REQUEST
    msg =
      'the request path is not a valid URL path (a fragment, or a bad percent-encoding): send the path alone'
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    code = ResponseCode.URI_TOO_LONG
    msg = `a part of the request path is over ${MAX_PARAM_LENGTH} characters: no media link, audioId or other identifier the platform gives is that long`
  } else {
    request.log.error({ err: error }, 'unexpected router error')
  }
  noteRefusal(request, code, msg)
  void reply
    .code(catalogueEntry(code).httpStatus)
    .header('x-request-id', request.id)
    .send({ code, msg, requestId: request.id })
  // Fastify does not report these requests completed: their one line is written here.
  request.log.info({ req: request, res: reply, code, pathLength: request.url.length }, 'request completed')
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
 * Two requests Node answers itself, which are answered in the catalogue's shape instead (4000, then the
 * connection is closed): an Expect other than 100-continue (Node: an empty 417) and CONNECT (Node: the
 * connection closed without a word).
 */
function answerWhatNodeWould(app: FastifyInstance): void {
  const refuse = (request: IncomingMessage, what: string, msg: string) => {
    const requestId = randomUUID()
    app.log.info(
      { reqId: requestId, remoteAddress: request.socket.remoteAddress, code: ResponseCode.INVALID_REQUEST },
      `${what} refused`,
    )
    return catalogueAnswer(ResponseCode.INVALID_REQUEST, msg, requestId)
  }
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const { status, headers, body } = refuse(
      request,
      'Expect',
      'the only Expect the platform supports is 100-continue: send the request without this Expect header',
    )
    response.writeHead(status, headers).end(body)
  })
  app.server.on('connect', (request: IncomingMessage, socket: Socket) => {
    const answer = refuse(request, 'CONNECT', 'CONNECT is not supported: the platform is not a proxy')
    socket.end(rawAnswer(answer))
  })
}

/** The 4080 message: which limits the request broke (Node does not say whether headers or body). */
function timeoutMessage(headersTimeoutMs: number, requestTimeoutMs: number): string {
  const seconds = (ms: number) => `${ms / 1000} s`
  const limits =
    headersTimeoutMs < requestTimeoutMs
      ? `its headers must arrive within ${seconds(headersTimeoutMs)} and the whole request, body included, within ${seconds(requestTimeoutMs)}`
      : `the whole request, headers and body, must arrive within ${seconds(requestTimeoutMs)}`
  return `the request did not arrive within the server's time limit: ${limits}; send it again without pausing part-way`
}

/** A catalogue answer as a status line's status, headers and body; the connection is closed after it. */
function catalogueAnswer(code: ResponseCodeValue, msg: string, requestId: string) {
  const body = JSON.stringify({ code, msg, requestId })
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-Id': requestId,
    Connection: 'close',
  }
  return { status: catalogueEntry(code).httpStatus, headers, body }
}

/** A catalogue answer as the bytes of an HTTP/1.1 response. */
function rawAnswer({ status, headers, body }: ReturnType<typeof catalogueAnswer>): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`)
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n${body}`
}

/** Writes a catalogue answer straight on a socket, for a request Fastify never got or gave up on. */
function writeAnswer(socket: Socket, code: ResponseCodeValue, msg: string, requestId: string): void {
  socket.write(rawAnswer(catalogueAnswer(code, msg, requestId)))
}

/**
 * Answers what no route sees, then closes the connection: what Node cannot parse as an HTTP request (a
 * malformed request line or header, a bad Content-Length, a broken chunk) with 4000, or 4130 for
 * headers over Node's 16 KiB; a request whose headers or body did not arrive within the timeouts with
 * 4080 (carrying the requestId of the request it cut off, when its headers had arrived). As Node does,
 * nothing is written when an answer to an earlier request on the connection has begun. A parse error
 * is logged at trace, as Fastify does (the raw packet is redacted); a timeout is a request that failed,
 * logged once at info.
 */
function clientErrorHandler(timeoutMsg: string, requestOf: WeakMap<ServerResponse, FastifyRequest>) {
  return function answerClientError(
    this: FastifyInstance,
    error: NodeJS.ErrnoException,
    socket: Socket,
  ): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return
    const answering = (socket as { _httpMessage?: ServerResponse })._httpMessage
    const canAnswer = socket.writable && !answering?.headersSent
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      const request = answering && requestOf.get(answering)
      const requestId = request?.id ?? randomUUID()
      if (request) {
        markTimedOut(request.raw)
        request.log.info(
          { req: request, res: { statusCode: 408 }, code: ResponseCode.REQUEST_TIMEOUT },
          'request timed out',
        )
      } else {
        this.log.info(
          { reqId: requestId, remoteAddress: socket.remoteAddress, code: ResponseCode.REQUEST_TIMEOUT },
          'request timed out before its headers were complete',
        )
      }
      if (canAnswer) writeAnswer(socket, ResponseCode.REQUEST_TIMEOUT, timeoutMsg, requestId)
    } else {
      this.log.trace({ err: error }, 'client error')
      if (canAnswer) {
        const tooLarge = error.code === 'HPE_HEADER_OVERFLOW'
        writeAnswer(
          socket,
          tooLarge ? ResponseCode.PAYLOAD_TOO_LARGE : ResponseCode.INVALID_REQUEST,
          tooLarge ? 'the request headers are too large' : 'the request is not valid HTTP/1.1',
          randomUUID(),
        )
      }
    }
    socket.destroy(error)
  }
}

/** Over this, a request is logged at info even when it succeeded. */
export const SLOW_REQUEST_MS = 1000

/**
 * The level of a request's one log line: warn when the platform failed it (5xx), info when it was
 * refused (4xx) or took over SLOW_REQUEST_MS, debug otherwise.
 */
export function requestLogLevel(statusCode: number, responseTimeMs: number): 'warn' | 'info' | 'debug' {
  if (statusCode >= 500) return 'warn'
  return statusCode >= 400 || responseTimeMs > SLOW_REQUEST_MS ? 'info' : 'debug'
}

/**
 * One line per request, written once it is answered ("request completed"), at requestLogLevel: a 4xx is
 * at info so that an operator finds the requestId a partner quotes. It holds the method, the path (its
 * query redacted), the status, the catalogue code of a refusal (and the reason of a 5xx) and the time;
 * never a header, token or body. Fastify's own "incoming request" line is not written. A request that
 * gets no answer logs its own line instead: a client gone mid-body (error-handler.ts), a timeout (4080).
 * An unexpected error also logs its stack (error-handler.ts).
 */
class RequestLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const responseTime = reply.elapsedTime
    const line = { req: request, res: reply, ...refusalOf(request), responseTime }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log[requestLogLevel(reply.statusCode, responseTime)](line, 'request completed')
  }
}

/**
 * JSON logs (pino) on stderr — stdout is the CLI's — without secrets: request bodies are never
 * logged, nor query strings (an admin token sent in one would be written out with the URL), nor the
 * raw bytes of a malformed request (Fastify logs them at trace, Authorization header included), and
 * the headers that carry credentials are redacted should a serializer ever include them. Every line
 * then goes through redactSecrets (log-redaction.ts), which finds media links' signatures, tokens and
 * secrets wherever they are in it.
 */
function loggerOptions(
  level: PlatformConfig['logLevel'],
  stream: LogDestination,
): FastifyServerOptions['logger'] {
  return {
    level,
    stream,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'err.rawPacket'],
      censor: '[redacted]',
    },
    // Whatever a line holds, a credential in it is redacted as it is written.
    hooks: { streamWrite: redactSecrets },
    serializers: {
      req: (request: {
        method: string
        url: string
        host?: string
        ip?: string
        socket?: { remotePort?: number }
      }) => ({
        method: request.method,
        url: loggedPath(request.url, MAX_PARAM_LENGTH),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
    },
  }
}
