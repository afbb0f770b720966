import { createHash, timingSafeEqual } from 'node:crypto'
import { Readable } from 'node:stream'
import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { consoleRoutes } from '../console/console-routes.js'
import type { PlatformContext } from '../context.js'
import { apiReference } from '../docs/api-reference.js'
import { NewEnterprise, PushUrlChange } from '../enterprises/enterprise-input.js'
import {
  createEnterprise,
  disableEnterprise,
  enterpriseExists,
  listEnterprises,
  rotateKey,
  setPushUrl,
} from '../enterprises/enterprise-store.js'
import { ApiError } from '../http/api-error.js'
import { bearerCredentials } from '../http/bearer.js'
import { createServer, type Lifecycle } from '../http/server-options.js'
import { checkPushUrl } from '../push/address-policy.js'
import { deliveryRoutes } from '../push/delivery-routes.js'
import { resumeHeld } from '../push/delivery-store.js'
import { endpointRoutes } from '../push/endpoint-routes.js'
import {
  audioIdGenerator,
  RecordingUpdate,
  TranscriptPart,
  toNewRecording,
} from '../recordings/recording-input.js'
import {
  attachTranscript,
  deleteRecording,
  insertRecordings,
  updateRecording,
} from '../recordings/recording-store.js'
import type { Queryable } from '../storage/database.js'
import { importJsonLines } from './json-lines-import.js'

export const ADMIN_PREFIX = '/admin/v1'

/**
 * The operators' API (DESIGN.md §7), on its own listener bound to loopback by default and guarded by
 * the admin bearer token. Successes answer with the resource itself; refusals with {code, msg, requestId}.
 */
export async function buildAdminApi(
  context: PlatformContext,
  lifecycle: Lifecycle,
  adminToken: string,
): Promise<FastifyInstance> {
  // An import may upload EARSHOT_ADMIN_BODY_LIMIT slowly, so requests here get the admin timeout.
  const app = createServer(context, {
    bodyLimit: 1024 * 1024,
    requestTimeoutSeconds: context.config.adminRequestTimeoutSeconds,
  })
  context.metrics.instrumentHttp(app, 'admin')
  // JSON Lines import bodies are handed over as the request stream, read line by line under their
  // own, larger limit (json-lines-import.ts).
  app.addContentTypeParser(['application/x-ndjson', 'application/jsonl'], (_request, payload, done) =>
    done(null, payload),
  )

  const expected = digest(adminToken)
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    if (isPublicPath(request.url)) return
    if (lifecycle.shuttingDown) throw new ApiError(ResponseCode.UNAVAILABLE, 'the platform is shutting down')
    const given = bearerCredentials(request.headers.authorization)
    if (!given || !timingSafeEqual(digest(given), expected)) {
      // Closing the connection stops a client without the token from holding it for the admin timeout.
      throw new ApiError(
        ResponseCode.UNAUTHORIZED,
        'the admin API needs "Authorization: Bearer <EARSHOT_ADMIN_TOKEN>"',
        { connection: 'close' },
      )
    }
  })

  const newAudioId = audioIdGenerator(context.randomBytes)
  const { db, config } = context

  app.get('/healthz', async () => ({ status: 'ok' }))

  /** Prometheus metrics; the scraper sends the admin bearer token like any admin client. */
  app.get('/metrics', async (_request, reply) => {
    const { registry } = context.metrics
    return reply.type(registry.contentType).send(await registry.metrics())
  })

  apiReference(app, 'admin')

  app.post(`${ADMIN_PREFIX}/enterprises`, async (request, reply) => {
    const body = NewEnterprise.parse(objectBody(request))
    const pushUrl = await checkPushUrl(body.pushUrl, config.pushAllowPrivate)
    const created = await createEnterprise(db, body.name.trim(), pushUrl, context.randomBytes)
    // Other instances hear of every change by NOTIFY (credential-cache.ts); this one drops its entries now.
    context.credentials.invalidate(created.enterpriseId)
    return reply.code(201).send(created)
  })

  app.get(`${ADMIN_PREFIX}/enterprises`, async () => ({ enterprises: await listEnterprises(db) }))

  app.post(`${ADMIN_PREFIX}/enterprises/:enterpriseId/disable`, async (request) => {
    const enterpriseId = enterpriseIdParam(request)
    if (!(await disableEnterprise(db, enterpriseId))) throw noSuchEnterprise(enterpriseId)
    context.credentials.invalidate(enterpriseId)
    return { enterpriseId, disabled: true }
  })

  app.post(`${ADMIN_PREFIX}/enterprises/:enterpriseId/rotate-key`, async (request) => {
    const enterpriseId = enterpriseIdParam(request)
    const rotated = await rotateKey(
      db,
      enterpriseId,
      config.keyGraceSeconds,
      context.clock(),
      context.randomBytes,
    )
    if (!rotated) throw noSuchEnterprise(enterpriseId)
    context.credentials.invalidate(enterpriseId)
    return rotated
  })

  app.put(`${ADMIN_PREFIX}/enterprises/:enterpriseId/push-url`, async (request) => {
    const enterpriseId = enterpriseIdParam(request)
    const pushUrl = await checkPushUrl(
      PushUrlChange.parse(objectBody(request)).pushUrl,
      config.pushAllowPrivate,
    )
    if (!(await setPushUrl(db, enterpriseId, pushUrl))) throw noSuchEnterprise(enterpriseId)
    // Deliveries held for a disabled push URL go to the new one, unless it is disabled too.
    await resumeHeld(db, [enterpriseId])
    return { enterpriseId, pushUrl }
  })

  app.post(`${ADMIN_PREFIX}/enterprises/:enterpriseId/recordings`, async (request, reply) => {
    const enterpriseId = await existingEnterprise(request)
    const recording = toNewRecording(request.body, newAudioId)
    await db.transaction((tx) => insertRecordings(tx, enterpriseId, [recording]))
    return reply.code(201).send({ audioId: recording.audioId })
  })

  app.put(`${ADMIN_PREFIX}/enterprises/:enterpriseId/recordings/:audioId/transcript`, async (request) => {
    const { enterpriseId, audioId } = recordingParams(request)
    const transcript = TranscriptPart.parse(request.body)
    await onRecording(enterpriseId, audioId, (tx) => attachTranscript(tx, enterpriseId, audioId, transcript))
    return { audioId }
  })

  app.patch(`${ADMIN_PREFIX}/enterprises/:enterpriseId/recordings/:audioId`, async (request) => {
    const { enterpriseId, audioId } = recordingParams(request)
    const changes = RecordingUpdate.parse(objectBody(request))
    await onRecording(enterpriseId, audioId, (tx) => updateRecording(tx, enterpriseId, audioId, changes))
    return { updated: audioId }
  })

  app.delete(`${ADMIN_PREFIX}/enterprises/:enterpriseId/recordings/:audioId`, async (request) => {
    const { enterpriseId, audioId } = recordingParams(request)
    await onRecording(enterpriseId, audioId, (tx) => deleteRecording(tx, enterpriseId, audioId))
    return { deleted: audioId }
  })

  /** Runs a change of one recording in a transaction; 4040 when the enterprise has no such recording. */
  async function onRecording(
    enterpriseId: number,
    audioId: string,
    change: (tx: Queryable) => Promise<boolean>,
  ): Promise<void> {
    // An audioId holding U+0000 cannot exist (and PostgreSQL text cannot hold it).
    if (!audioId.includes('\u0000') && (await db.transaction(change))) return
    throw new ApiError(
      ResponseCode.NOT_FOUND,
      `enterprise ${enterpriseId} has no recording ${JSON.stringify(audioId)}`,
    )
  }

  app.post(`${ADMIN_PREFIX}/enterprises/:enterpriseId/recordings/import`, async (request, reply) => {
    const enterpriseId = await existingEnterprise(request)
    if (!(request.body instanceof Readable)) {
      throw new ApiError(
        ResponseCode.UNSUPPORTED_MEDIA_TYPE,
        'send the JSON Lines file as Content-Type application/x-ndjson',
      )
    }
    return importJsonLines({ db, enterpriseId, bodyLimitBytes: config.adminBodyLimitBytes }, request, reply)
  })

  deliveryRoutes(app, context, ADMIN_PREFIX)
  endpointRoutes(app, context, ADMIN_PREFIX)
  consoleRoutes(app, context, ADMIN_PREFIX)

  async function existingEnterprise(request: FastifyRequest): Promise<number> {
    const enterpriseId = enterpriseIdParam(request)
    if (!(await enterpriseExists(db, enterpriseId))) throw noSuchEnterprise(enterpriseId)
    return enterpriseId
  }

  return app
}

/**
 * What the admin listener serves without the token: the health probe, the API's description and the
 * console's pages and assets (the console signs in with the token, and sends it on every API call).
 */
const PUBLIC_PATHS = ['/healthz', '/openapi.json']
const PUBLIC_PREFIXES = ['/docs', '/console']

function isPublicPath(url: string): boolean {
  const path = url.split('?', 1)[0] ?? ''
  return (
    PUBLIC_PATHS.includes(path) ||
    PUBLIC_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
  )
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

function objectBody(request: FastifyRequest): Record<string, unknown> {
  const body = request.body
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(ResponseCode.INVALID_REQUEST, 'the body must be a JSON object')
  }
  return body as Record<string, unknown>
}

function enterpriseIdParam(request: FastifyRequest): number {
  const raw = (request.params as { enterpriseId: string }).enterpriseId
  const id = /^\d{1,15}$/.test(raw) ? Number(raw) : 0
  if (id < 1) throw new InvalidParameterError('enterpriseId', 'must be a positive integer')
  return id
}

function recordingParams(request: FastifyRequest): { enterpriseId: number; audioId: string } {
  return {
    enterpriseId: enterpriseIdParam(request),
    audioId: (request.params as { audioId: string }).audioId,
  }
}

function noSuchEnterprise(enterpriseId: number): ApiError {
  return new ApiError(ResponseCode.NOT_FOUND, `no enterprise ${enterpriseId}`)
}
