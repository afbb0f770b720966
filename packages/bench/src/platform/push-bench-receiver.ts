/**
 * Child process of `push.bench.ts` and `push-endpoints.bench.ts`: a partner's push endpoint on loopback (node:http). Each push to
 * `/push/<label>` is opened with the enterprise's key and answered `{"code":2000}` at once; as soon as
 * the answer is out, the receipt callback goes to the platform (confirmReceipt, POST /openapi/v1/callback,
 * sealed with a fresh nonce, with an access token the partner client fetched when the enterprise was
 * registered) over keep-alive connections. A callback the platform does not answer with 2000 is retried
 * after 100 ms. The callbacks are sent here rather than by the partner client, whose checks, retries and
 * fetch would add their cost to the receiver's, which shares the cores with the platform measured.
 *
 * A second server (`slowUrl`, another origin) does the same, but answers each push BENCH_PUSH_SLOW_ANSWER_MS late:
 * a slow partner beside the others. A push to `/gone/<anything>` is answered 410 Gone: a partner gone.
 *
 * Control endpoints for the bench: POST /bench/register {label, enterpriseId, keyVersion, secret}
 * (fetches the token), GET /bench/progress?label=… (counts so far).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { EarshotClient } from '@earshot/partner'
import { type EnvelopeKey, loadKey, open, PartnerOperation, seal } from '@earshot/protocol'
import { Agent, request } from 'undici'
import { serveParent } from '../child.js'

export interface PushReceiverReady {
  type: 'ready'
  url: string
  slowUrl: string
}

export interface ReceiverRegistration {
  label: string
  enterpriseId: number
  keyVersion: number
  secret: string
}

export interface ReceiverProgress {
  /** Pushes read, before they are opened and answered. */
  received: number
  /** Pushes opened and acknowledged. */
  pushes: number
  /** Distinct eventIds among them. */
  events: number
  /** Distinct audioIds whose callback the platform answered with 2000. */
  confirmed: number
  /** Callbacks the platform answered with 2000 (one per push acknowledged: a recording may have several). */
  callbacks: number
  /** Pushes that could not be opened (answered 400). */
  badPushes: number
  callbackRetries: number
  /** Callbacks given up after MAX_CALLBACK_TRIES. */
  callbackFailures: number
  errorSamples: string[]
}

const MAX_CALLBACK_TRIES = 50
const RETRY_DELAY_MS = 100
const MAX_SAMPLES = 5

const partnerUrl = process.env.BENCH_PUSH_PARTNER_URL
if (!partnerUrl)
  throw new Error(
    'BENCH_PUSH_PARTNER_URL is not set: this module is started by push.bench.js or push-endpoints.bench.js',
  )
const connections = Number(process.env.BENCH_PUSH_CALLBACK_CONNECTIONS || 16)
const slowAnswerMs = Number(process.env.BENCH_PUSH_SLOW_ANSWER_MS || 3000)
const agent = new Agent({ connections, keepAliveTimeout: 60_000 })
const ACK = Buffer.from('{"code":2000}')
const ackHeaders = { 'content-type': 'application/json', 'content-length': ACK.length }

interface Enterprise {
  enterpriseId: number
  keyVersion: number
  secret: string
  key: EnvelopeKey
  token: string
  progress: ReceiverProgress
  eventIds: Set<string>
  confirmedIds: Set<string>
}

const enterprises = new Map<string, Enterprise>()
let counter = 0

const { confirmReceipt } = PartnerOperation

async function postCallback(body: unknown, token: string): Promise<{ status: number; reply: Reply }> {
  const response = await request(`${partnerUrl}${confirmReceipt.path}`, {
    method: confirmReceipt.method,
    dispatcher: agent,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  })
  const text = await response.body.text()
  let reply: Reply
  try {
    reply = JSON.parse(text) as Reply
  } catch {
    reply = { msg: text.slice(0, 200) }
  }
  return { status: response.statusCode, reply }
}

interface Reply {
  code?: number
  msg?: string
}

/** A new token, from a client of its own: a client's cached token is the one the platform refused. */
function fetchToken(registration: Pick<ReceiverRegistration, 'enterpriseId' | 'keyVersion' | 'secret'>) {
  const { enterpriseId, keyVersion, secret } = registration
  return new EarshotClient({ baseUrl: partnerUrl as string, enterpriseId, keyVersion, secret }).token()
}

function sample(enterprise: Enterprise, message: string): void {
  if (enterprise.progress.errorSamples.length < MAX_SAMPLES) enterprise.progress.errorSamples.push(message)
}

async function callBack(enterprise: Enterprise, audioId: string): Promise<void> {
  for (let tries = 1; ; tries++) {
    let problem: string
    try {
      const { status, reply } = await postCallback(
        seal(enterprise.key, enterprise.keyVersion, `bench-cb-${++counter}`, { audioId }),
        enterprise.token,
      )
      if (reply.code === 2000) {
        enterprise.progress.callbacks++
        enterprise.confirmedIds.add(audioId)
        enterprise.progress.confirmed = enterprise.confirmedIds.size
        return
      }
      problem = `callback: HTTP ${status}, code ${reply.code}: ${reply.msg}`
      if (reply.code === 4010 || reply.code === 4011) {
        enterprise.token = await fetchToken(enterprise).catch(() => enterprise.token)
      }
    } catch (error) {
      problem = `callback: ${(error as Error).message}`
    }
    sample(enterprise, problem)
    if (tries >= MAX_CALLBACK_TRIES) {
      enterprise.progress.callbackFailures++
      return
    }
    enterprise.progress.callbackRetries++
    await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS))
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  })
  response.end(text)
}

async function handlePush(
  label: string,
  request: IncomingMessage,
  response: ServerResponse,
  delayMs: number,
) {
  const body = await readBody(request)
  const enterprise = enterprises.get(label)
  if (!enterprise) return answer(response, 404, { code: 4040, msg: `no enterprise registered as ${label}` })
  enterprise.progress.received++
  if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
  let event: { eventId?: unknown; audioId?: unknown }
  try {
    event = open(JSON.parse(body), enterprise.key).plaintext
    if (typeof event.eventId !== 'string' || typeof event.audioId !== 'string') {
      throw new Error('the push holds no eventId or audioId')
    }
  } catch (error) {
    enterprise.progress.badPushes++
    sample(enterprise, `push: ${(error as Error).message}`)
    return answer(response, 400, { code: 4000, msg: (error as Error).message })
  }
  enterprise.progress.pushes++
  enterprise.eventIds.add(event.eventId)
  enterprise.progress.events = enterprise.eventIds.size
  const audioId = event.audioId
  response.writeHead(200, ackHeaders)
  response.end(ACK, () => void callBack(enterprise, audioId))
}

async function handleRegister(request: IncomingMessage, response: ServerResponse) {
  const registration = JSON.parse(await readBody(request)) as ReceiverRegistration
  enterprises.set(registration.label, {
    enterpriseId: registration.enterpriseId,
    keyVersion: registration.keyVersion,
    secret: registration.secret,
    key: loadKey(registration.secret),
    token: await fetchToken(registration),
    progress: {
      received: 0,
      pushes: 0,
      events: 0,
      confirmed: 0,
      callbacks: 0,
      badPushes: 0,
      callbackRetries: 0,
      callbackFailures: 0,
      errorSamples: [],
    },
    eventIds: new Set(),
    confirmedIds: new Set(),
  })
  answer(response, 200, { registered: registration.label })
}

const handler = (delayMs: number) => (request: IncomingMessage, response: ServerResponse) => {
  const url = new URL(request.url ?? '/', 'http://receiver')
  const handled =
    request.method === 'POST' && url.pathname.startsWith('/gone/')
      ? readBody(request).then(() => answer(response, 410, { code: 4040, msg: 'gone' }))
      : request.method === 'POST' && url.pathname.startsWith('/push/')
        ? handlePush(url.pathname.slice('/push/'.length), request, response, delayMs)
        : request.method === 'POST' && url.pathname === '/bench/register'
          ? handleRegister(request, response)
          : request.method === 'GET' && url.pathname === '/bench/progress'
            ? Promise.resolve(
                answer(response, 200, enterprises.get(url.searchParams.get('label') ?? '')?.progress ?? null),
              )
            : Promise.resolve(answer(response, 404, { code: 4040, msg: 'not found' }))
  handled.catch((error: unknown) => {
    if (!response.headersSent) answer(response, 500, { code: 5000, msg: (error as Error).message })
    else response.destroy()
  })
}

async function listen(delayMs: number): Promise<{ server: Server; url: string }> {
  const server = createServer({ keepAliveTimeout: 60_000 }, handler(delayMs))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }
}

const servers = [await listen(0), await listen(slowAnswerMs)] as const
serveParent(
  { url: servers[0].url, slowUrl: servers[1].url } satisfies Omit<PushReceiverReady, 'type'>,
  async () => {
    for (const { server } of servers) {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
    await agent.close()
  },
)
