/**
 * A stand-in for the platform in the audio tests (not shipped, not run as a test): a media server with the
 * behaviour of the signed audio links, and a partner API answering the token, query, change feed and
 * callback requests, sealed with the enterprise's key.
 */
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  type Change,
  type JsonObject,
  loadKey,
  open,
  type RecordingData,
  SPEC_VERSION,
  seal,
} from '@earshot/protocol'

export interface MediaRequest {
  method: string
  link: string
  range: string | undefined
  ifRange: string | undefined
  status: number
}

interface StoredAudio {
  body: Buffer
  contentType: string
  version: number
  /** Without ETag, Repr-Digest and Accept-Ranges, as a plain web server may answer. */
  plain: boolean
}

interface LinkInfo {
  id: string
  version: number
  linkNo: number
}

export interface MediaServer {
  readonly url: string
  /** Every request, in order. */
  readonly requests: MediaRequest[]
  /** Stores the audio of `id`; replacing it makes the links made before answer 404. */
  put(id: string, body: Buffer, options?: { contentType?: string; plain?: boolean }): void
  remove(id: string): void
  /** A fresh link to the audio as stored now. */
  link(id: string): string
  /** Every link made so far answers 403 4030 (expired). */
  expireLinks(): void
  /** The next GET with a body sends `bytes` of it, then sends nothing more until cut() or the client ends it. */
  stallNextAfter(bytes: number): void
  /** Destroys the connections of the stalled answers. */
  cut(): void
  /** GETs wait for `gate` before they answer. */
  holdAnswers(gate: Promise<void> | undefined): void
  /** Repr-Digest states a wrong digest while set. */
  lieAboutDigest(lie: boolean): void
  close(): Promise<void>
}

export const sha256 = (body: Buffer) => createHash('sha256').update(body).digest()

const refusal = (response: ServerResponse, status: number, code: number, msg: string) => {
  const body = JSON.stringify({ code, msg, requestId: randomBytes(4).toString('hex') })
  response.writeHead(status, { 'content-type': 'application/json' }).end(body)
  return status
}

/**
 * Answers with the stored audio as the platform's signed links do (ETag, Repr-Digest, ranges from an offset,
 * If-Range), or as a plain web server does; `send` writes the body, `lie` states a wrong digest. Returns the
 * status.
 */
function serveFile(
  request: IncomingMessage,
  response: ServerResponse,
  id: string,
  file: StoredAudio,
  lie: boolean,
  send: (body: Buffer) => void,
): number {
  const digest = sha256(lie ? Buffer.concat([file.body, Buffer.from('x')]) : file.body)
  const etag = `"${sha256(file.body).toString('hex')}"`
  const size = file.body.length
  const headers: Record<string, string> = {
    'content-type': file.contentType,
    'cache-control': 'private',
    'content-disposition': `attachment; filename="${id}.audio"`,
    ...(!file.plain && {
      'accept-ranges': 'bytes',
      etag,
      'repr-digest': `sha-256=:${digest.toString('base64')}:`,
    }),
  }
  if (!file.plain && request.headers['if-none-match'] === etag) {
    response.writeHead(304, headers).end()
    return 304
  }
  const start = Number(/^bytes=(\d+)-$/.exec(request.headers.range ?? '')?.[1] ?? Number.NaN)
  const ifRange = request.headers['if-range']
  const ranged = !file.plain && Number.isSafeInteger(start) && (ifRange === undefined || ifRange === etag)
  if (ranged && start >= size) {
    response.writeHead(416, { ...headers, 'content-range': `bytes */${size}` }).end()
    return 416
  }
  const from = ranged ? start : 0
  const status = ranged ? 206 : 200
  response.writeHead(status, {
    ...headers,
    'content-length': String(size - from),
    ...(ranged && { 'content-range': `bytes ${from}-${size - 1}/${size}` }),
  })
  send(file.body.subarray(from))
  return status
}

export async function startMediaServer(): Promise<MediaServer> {
  const files = new Map<string, StoredAudio>()
  const links = new Map<string, LinkInfo>()
  const requests: MediaRequest[] = []
  let linkCount = 0
  let versions = 0
  let expiredBelow = 0
  let stallAfter: number | undefined
  const stalled = new Set<ServerResponse>()
  let gate: Promise<void> | undefined
  let lie = false

  const answer = (request: IncomingMessage, response: ServerResponse): number => {
    const token = /^\/media\/v1\/([0-9a-f]+)$/.exec(request.url ?? '')?.[1]
    const info = token === undefined ? undefined : links.get(token)
    if (!info) return refusal(response, 403, 4030, 'the link is not valid')
    if (info.linkNo < expiredBelow) {
      return refusal(response, 403, 4030, 'the link has expired; query the recording again for a fresh link')
    }
    const file = files.get(info.id)
    if (!file || file.version !== info.version) {
      return refusal(response, 404, 4040, 'the recording was deleted or its audio replaced')
    }
    return serveFile(request, response, info.id, file, lie, (body) => sendBody(request, response, body))
  }

  const sendBody = (request: IncomingMessage, response: ServerResponse, body: Buffer) => {
    if (request.method === 'HEAD') return response.end()
    const bytes = stallAfter
    stallAfter = undefined
    if (bytes === undefined) return response.end(body)
    stalled.add(response)
    response.once('close', () => stalled.delete(response))
    response.write(body.subarray(0, bytes))
  }

  const server = createServer((request, response) => {
    void (async () => {
      await gate
      const status = answer(request, response)
      requests.push({
        method: request.method ?? '',
        link: `${url}${request.url}`,
        range: request.headers.range,
        ifRange: request.headers['if-range'] as string | undefined,
        status,
      })
    })()
  })
  const url = await listen(server)
  return {
    url,
    requests,
    put(id, body, options = {}) {
      const version = ++versions
      const { contentType = 'audio/mpeg', plain = false } = options
      files.set(id, { body, contentType, version, plain })
    },
    remove: (id) => void files.delete(id),
    link(id) {
      const token = randomBytes(12).toString('hex')
      links.set(token, { id, version: files.get(id)?.version ?? 0, linkNo: linkCount++ })
      return `${url}/media/v1/${token}`
    },
    expireLinks() {
      expiredBelow = linkCount
    },
    stallNextAfter(bytes) {
      stallAfter = bytes
    },
    cut() {
      for (const response of stalled) response.socket?.destroy()
    },
    holdAnswers(next) {
      gate = next
    },
    lieAboutDigest(next) {
      lie = next
    },
    close: () => stop(server),
  }
}

export interface FakeApiCall {
  path: string
  plaintext: JsonObject
  /** The keyVersion of the request's envelope, and its bearer token (none for the token request). */
  keyVersion: number
  token: string | undefined
}

/**
 * Answers a sealed request to its path with the data to seal (with the key the request was sealed with);
 * throwing a FakeRefusal answers that instead, a FakeCut cuts the connection, anything else answers 500.
 */
export type FakeRoute = (plaintext: JsonObject) => JsonObject | Promise<JsonObject>

/** Thrown by a FakeRoute: the answer is this status, with this body (JSON, or a gateway's text) and headers. */
export class FakeRefusal extends Error {
  constructor(
    readonly status: number,
    readonly body: JsonObject | string,
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`)
  }
}

/** Thrown by a FakeRoute: the connection is cut after the request arrived, without an answer. */
export class FakeCut extends Error {}

export interface FakeApi {
  readonly url: string
  readonly calls: FakeApiCall[]
  /** What the query answers: the recording's data as it is now, by audioId (a function: links are fresh). */
  readonly recordings: Map<string, () => RecordingData>
  /** The change feed, oldest first; a cursor is the number of changes read. */
  readonly changes: Change[]
  /** Routes besides the query and the change feed, by path. */
  readonly routes: Map<string, FakeRoute>
  /** Opens (and answers) requests sealed with this keyVersion's key too. */
  addKey(keyVersion: number, secret: string): void
  close(): Promise<void>
}

export const FAKE_ENTERPRISE = { enterpriseId: 7, keyVersion: 1 }

/** The partner API of one enterprise with the key `secret`. */
export async function startFakeApi(secret: string): Promise<FakeApi> {
  const keys = new Map([[FAKE_ENTERPRISE.keyVersion, loadKey(secret)]])
  const routes = new Map<string, FakeRoute>()
  const calls: FakeApiCall[] = []
  const recordings = new Map<string, () => RecordingData>()
  const changes: Change[] = []

  const dataOf = (path: string, plaintext: JsonObject): JsonObject => {
    if (path === '/openapi/v1/audios') {
      const items = [...recordings]
        .filter(([audioId]) => plaintext.audioId === undefined || plaintext.audioId === audioId)
        .map(([audioId, data]) => ({ audioId, data: data() }))
      return { specVersion: SPEC_VERSION, page: 1, size: 20, total: items.length, items }
    }
    const from = Number(plaintext.cursor ?? 0)
    const items = changes.slice(from, from + Number(plaintext.size ?? 100))
    const nextCursor = String(from + items.length)
    return { specVersion: SPEC_VERSION, items, nextCursor, hasMore: from + items.length < changes.length }
  }

  const answer = async (request: IncomingMessage): Promise<JsonObject> => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const path = request.url ?? ''
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    const key = keys.get(body.keyVersion)
    if (!key) return { code: 4012, msg: `no key ${body.keyVersion}` }
    const { envelope, plaintext } = open(body, key)
    const token = request.headers.authorization?.replace(/^Bearer /, '')
    calls.push({ path, plaintext, keyVersion: envelope.keyVersion, token })
    if (path === '/openapi/v1/token') {
      const accessToken = `fake-${envelope.keyVersion}-${calls.length}`
      return { code: 2000, msg: 'success', data: { accessToken, expiresIn: 7200, tokenType: 'Bearer' } }
    }
    if (path === '/openapi/v1/callback') return { code: 2000, msg: 'success' }
    const route = routes.get(path)
    const answered = route ? await route(plaintext) : dataOf(path, plaintext)
    const data = seal(key, envelope.keyVersion, envelope.eventId, answered)
    return { code: 2000, msg: 'success', requestId: 'fake', data: data as unknown as JsonObject }
  }

  const refuse = (response: ServerResponse, error: unknown) => {
    if (error instanceof FakeCut) return void response.socket?.destroy()
    if (!(error instanceof FakeRefusal)) return void response.writeHead(500).end()
    const json = typeof error.body !== 'string'
    response.writeHead(error.status, {
      'content-type': json ? 'application/json' : 'text/html',
      ...error.headers,
    })
    response.end(json ? JSON.stringify(error.body) : error.body)
  }

  const server = createServer((request, response) => {
    answer(request).then(
      (body) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)),
      (error: unknown) => refuse(response, error),
    )
  })
  const url = await listen(server)
  return {
    url,
    calls,
    recordings,
    changes,
    routes,
    addKey: (keyVersion, other) => void keys.set(keyVersion, loadKey(other)),
    close: () => stop(server),
  }
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function stop(server: Server): Promise<void> {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
}

/** What a suite of CLI runs talks to: a fake partner API, a media server, a scratch folder, and the CLI's environment. */
export interface CliWorld {
  media: MediaServer
  api: FakeApi
  dir: string
  env: Record<string, string>
}

/** Starts a CliWorld whose API opens envelopes sealed with `secret`; its folder's name begins with `folderPrefix`. */
export async function startCliWorld(secret: string, folderPrefix: string): Promise<CliWorld> {
  const media = await startMediaServer()
  const api = await startFakeApi(secret)
  const dir = await mkdtemp(join(tmpdir(), folderPrefix))
  const env = {
    EARSHOT_BASE_URL: api.url,
    EARSHOT_ENTERPRISE_ID: String(FAKE_ENTERPRISE.enterpriseId),
    EARSHOT_KEY_VERSION: String(FAKE_ENTERPRISE.keyVersion),
    EARSHOT_SECRET: secret,
  }
  return { media, api, dir, env }
}

/** Stops what startCliWorld started, however far it got. */
export async function stopCliWorld(world: Partial<CliWorld>): Promise<void> {
  await world.media?.close()
  await world.api?.close()
  if (world.dir) await rm(world.dir, { recursive: true, force: true })
}
