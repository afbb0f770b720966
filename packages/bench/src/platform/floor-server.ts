/**
 * Child process of `cpu.bench.ts` on PostgreSQL: a request's own work and nothing else, on bare
 * node:http, for the token, the query and the callback. Each parses the body, opens the envelope under the
 * enterprise's key (held in memory) and records its nonce durably through the platform's own replay guard
 * (its batched statement, on its PostgreSQL layer); then the token is signed with the platform's signer,
 * the query's page and total are read by the platform's own statement and sealed, the callback's receipt
 * is recorded by the platform's own batched statement. The query and the callback first check the bearer
 * token with the platform's signing key, read from the database they share. No framework, schema, hook,
 * metric, log or error handling: the least CPU each request can cost with its data kept in PostgreSQL,
 * beside which the platform's figure is read.
 *
 * For push-cost.bench.ts it is also the push half of a delivery's floor: POST /floor/push sends sealed
 * pushes to a receiver (floor-push.ts), whose receipt callbacks it then takes with `recordReceipts` off:
 * opened and their nonce recorded, no receipt (the raw claim loop's completion stands for that write). It
 * runs on PostgreSQL (`databaseUrl`) or PGlite (`dataDir`).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  accessTokens,
  bearerCredentials,
  nonceGuard,
  openDatabase,
  queryRecordings,
  receiptBatcher,
  tokenSigningKey,
} from '@earshot/platform/internal'
import {
  type EnvelopeKey,
  type JsonObject,
  loadKey,
  open,
  PartnerOperation,
  parseEnvelope,
  type ResolvedRecordingFilter,
  SPEC_VERSION,
  seal,
} from '@earshot/protocol'
import { serveParent } from '../child.js'
import type { BareServerReady } from './bare-server.js'
import type { BenchEnterprise } from './bench-server.js'
import { type FloorPushes, sendFloorPushes } from './floor-push.js'

export interface FloorServerSpec {
  databaseUrl?: string
  dataDir?: string
  /** Whether a callback records its receipt (default) or only opens the envelope and records its nonce. */
  recordReceipts?: boolean
  enterprises: Pick<BenchEnterprise, 'enterpriseId' | 'keyVersion' | 'secret'>[]
}

const TOKEN_TTL_SECONDS = 7200
/**
 * How long every nonce row is kept: the platform's default replay window for a token's nonce
 * (EARSHOT_REPLAY_WINDOW), a year. A bearer request's row gets its token's expiry there instead, which
 * costs the same.
 */
const NONCE_WINDOW_MS = 365 * 86_400_000
const spec = JSON.parse(process.env.BENCH_FLOOR_SPEC ?? 'null') as FloorServerSpec | null
if (!spec)
  throw new Error('BENCH_FLOOR_SPEC is not set: this module is started by cpu.bench.js or push-cost.bench.js')
const keys = new Map<string, EnvelopeKey>(
  spec.enterprises.map((e) => [`${e.enterpriseId}:${e.keyVersion}`, loadKey(e.secret)]),
)
const recordReceipts = spec.recordReceipts !== false
const db = await openDatabase({ databaseUrl: spec.databaseUrl, dataDir: spec.dataDir })
const tokens = accessTokens(await tokenSigningKey(db, randomBytes))
const acceptNonce = nonceGuard(db)
const confirmReceipt = receiptBatcher(db)

interface Opened {
  enterpriseId: number
  key: EnvelopeKey
  keyVersion: number
  eventId: string
  plaintext: JsonObject
}

/** The envelope opened and its nonce recorded, for an enterprise named by the body or by the token. */
async function openOnce(body: Buffer, enterprise?: number): Promise<Opened> {
  const request = JSON.parse(body.toString('utf8')) as { enterpriseId: number }
  const envelope = parseEnvelope(request)
  const enterpriseId = enterprise ?? request.enterpriseId
  const { keyVersion, nonce, eventId } = envelope
  const key = keys.get(`${enterpriseId}:${keyVersion}`) as EnvelopeKey
  const { plaintext } = open(envelope, key)
  const expiresAtMs = Date.now() + NONCE_WINDOW_MS
  if (!(await acceptNonce({ enterpriseId, keyVersion, nonce, expiresAtMs }))) {
    throw new Error(`nonce ${nonce} replayed`)
  }
  return { enterpriseId, key, keyVersion, eventId, plaintext }
}

/** openOnce for a request made with a bearer token, checked first. */
function openWithToken(authorization: string | undefined, body: Buffer): Promise<Opened> {
  const checked = tokens.check(bearerCredentials(authorization) ?? '', Math.floor(Date.now() / 1000))
  if (!checked.ok) throw new Error(`token ${checked.reason}`)
  return openOnce(body, checked.claims.enterpriseId)
}

const answer = (data?: object) =>
  Buffer.from(JSON.stringify({ code: 2000, msg: 'success', requestId: randomUUID(), ...(data && { data }) }))

async function issueToken(body: Buffer): Promise<Buffer> {
  const { enterpriseId, keyVersion } = await openOnce(body)
  const expiresAt = Math.floor(Date.now() / 1000) + TOKEN_TTL_SECONDS
  const accessToken = tokens.issue({ enterpriseId, keyVersion, expiresAt }, randomBytes(12))
  return answer({ accessToken, expiresIn: TOKEN_TTL_SECONDS, tokenType: 'Bearer' })
}

async function queryPage(authorization: string | undefined, body: Buffer): Promise<Buffer> {
  const opened = await openWithToken(authorization, body)
  const filter = opened.plaintext as unknown as ResolvedRecordingFilter
  const page = await queryRecordings(db, opened.enterpriseId, filter)
  const data = { specVersion: SPEC_VERSION, page: filter.page, size: filter.size, ...page }
  return answer(seal(opened.key, opened.keyVersion, opened.eventId, data))
}

async function callback(authorization: string | undefined, body: Buffer): Promise<Buffer> {
  const opened = await openWithToken(authorization, body)
  const { audioId } = opened.plaintext as { audioId: string }
  if (!recordReceipts) return answer()
  if (!(await confirmReceipt({ enterpriseId: opened.enterpriseId, audioId })))
    throw new Error(`no ${audioId}`)
  return answer()
}

// The partner operations' paths, as the bench sends them (from the contracts).
const routes: Record<string, (authorization: string | undefined, body: Buffer) => Promise<Buffer>> = {
  [PartnerOperation.issueToken.path]: (_, body) => issueToken(body),
  [PartnerOperation.queryRecordings.path]: queryPage,
  [PartnerOperation.confirmReceipt.path]: callback,
  '/floor/push': async (_, body) => {
    const pushes = JSON.parse(body.toString('utf8')) as FloorPushes
    await sendFloorPushes(pushes, keys.get(`${pushes.enterpriseId}:${pushes.keyVersion}`) as EnvelopeKey)
    return answer()
  },
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    const route =
      routes[request.url ?? ''] ?? (() => Promise.reject(new Error(`no floor for ${request.url}`)))
    route(request.headers.authorization, Buffer.concat(chunks)).then(
      (body) => {
        response.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': body.length,
        })
        response.end(body)
      },
      (error: unknown) => {
        response.writeHead(500).end(String(error))
      },
    )
  })
})
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  serveParent({ url: `http://127.0.0.1:${port}` } satisfies Omit<BareServerReady, 'type'>, async () => {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
    await db.close()
  })
})
