/**
 * Child process of `cpu.bench.ts` on PostgreSQL: the token request's own work and nothing else, on bare
 * node:http — parse the body, open the envelope under the enterprise's key (held in memory), record its
 * nonce durably through the platform's own replay guard (its batched statement, on its PostgreSQL layer),
 * sign a token with the platform's own signer and answer it. No framework, schema, hook, metric, log or
 * error handling: the least CPU a token can cost with its nonce kept in PostgreSQL, beside which the
 * platform's figure is read.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { accessTokens, nonceGuard, openDatabase } from '@earshot/platform'
import { type EnvelopeKey, loadKey, open, parseEnvelope } from '@earshot/protocol'
import { serveParent } from '../child.js'
import type { BareServerReady } from './bare-server.js'
import type { BenchEnterprise } from './bench-server.js'

export interface FloorServerSpec {
  databaseUrl: string
  enterprises: Pick<BenchEnterprise, 'enterpriseId' | 'keyVersion' | 'secret'>[]
}

const TOKEN_TTL_SECONDS = 7200
/** The platform's default replay window for a token's nonce (EARSHOT_REPLAY_WINDOW): a year. */
const NONCE_WINDOW_MS = 365 * 86_400_000
const spec = JSON.parse(process.env.BENCH_FLOOR_SPEC ?? 'null') as FloorServerSpec | null
if (!spec) throw new Error('BENCH_FLOOR_SPEC is not set: this module is started by cpu.bench.js')
const keys = new Map<string, EnvelopeKey>(
  spec.enterprises.map((e) => [`${e.enterpriseId}:${e.keyVersion}`, loadKey(e.secret)]),
)
const tokens = accessTokens(randomBytes(32))
const db = await openDatabase({ databaseUrl: spec.databaseUrl })
const acceptNonce = nonceGuard(db)

async function issueToken(body: Buffer): Promise<Buffer> {
  const request = JSON.parse(body.toString('utf8')) as { enterpriseId: number }
  const envelope = parseEnvelope(request)
  const { enterpriseId } = request
  const { keyVersion, nonce } = envelope
  open(envelope, keys.get(`${enterpriseId}:${keyVersion}`) as EnvelopeKey)
  const now = Date.now()
  if (!(await acceptNonce({ enterpriseId, keyVersion, nonce, expiresAtMs: now + NONCE_WINDOW_MS }))) {
    throw new Error(`nonce ${nonce} replayed`)
  }
  const expiresAt = Math.floor(now / 1000) + TOKEN_TTL_SECONDS
  const accessToken = tokens.issue({ enterpriseId, keyVersion, expiresAt }, randomBytes(12))
  return Buffer.from(
    JSON.stringify({
      code: 2000,
      msg: 'success',
      requestId: randomUUID(),
      data: { accessToken, expiresIn: TOKEN_TTL_SECONDS, tokenType: 'Bearer' },
    }),
  )
}

const server = createServer((request, response) => {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    issueToken(Buffer.concat(chunks)).then(
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
