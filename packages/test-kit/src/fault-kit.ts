/**
 * What the fault-injection suites (`*.faults.test.ts`, `npm run test:faults`) share. They treat the
 * platform as a black box: it runs in child processes (child-platform.ts) and is observed only through
 * its admin API (deliveries, their states and attempts, /metrics) and through what a real loopback
 * receiver got: nothing here imports the platform's modules but its admin client.
 */
import { randomInt } from 'node:crypto'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { AdminClient, type Delivery, type ImportLine } from '@earshot/platform/admin-client'
import { DELIVERY_STATES, type EnterpriseCredentials } from '@earshot/platform/internal'
import { loadKey, open, PushEvent, seal } from '@earshot/protocol'

// --- seeded randomness ----------------------------------------------------------------------------

export interface SeededRandom {
  readonly seed: number
  /** Uniform in [0, 1). */
  next(): number
  /** A whole number from min to max, both included. */
  int(min: number, max: number): number
}

/**
 * A reproducible random source (mulberry32). The seed comes from EARSHOT_FAULTS_SEED when set, else it
 * is drawn at random; either way it is printed, so a failing run can be repeated with the same choices.
 */
export function seededRandom(label: string, log: (line: string) => void = console.log): SeededRandom {
  const fromEnv = process.env.EARSHOT_FAULTS_SEED
  const seed = fromEnv && /^\d+$/.test(fromEnv) ? Number(fromEnv) >>> 0 : randomInt(2 ** 31)
  log(`${label}: seed ${seed} (EARSHOT_FAULTS_SEED=${seed} repeats this run's random choices)`)
  let state = seed
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
  return { seed, next, int: (min, max) => min + Math.floor(next() * (max - min + 1)) }
}

// --- the admin API ----------------------------------------------------------------------------------

export interface AdminEndpoint {
  adminUrl: string
  adminToken: string
}

/** The admin client of a platform, with its admin token. */
export function adminClientOf(platform: AdminEndpoint): AdminClient {
  return new AdminClient(platform.adminUrl, platform.adminToken)
}

export type { EnterpriseCredentials }

export function createEnterprise(platform: AdminEndpoint, name: string): Promise<EnterpriseCredentials> {
  return adminClientOf(platform).createEnterprise(name)
}

export async function setPushUrl(platform: AdminEndpoint, enterpriseId: number, pushUrl: string) {
  await adminClientOf(platform).setPushUrl(enterpriseId, pushUrl)
}

export interface RecordingBatch {
  /** JSON Lines, one recording a line. */
  lines: string
  audioIds: string[]
  /** Deliveries the batch makes: one per recording, one more per recording with its transcript. */
  events: number
}

/**
 * `count` recordings with audioIds `${prefix}-0`…, the ones for which `withTranscript(i)` holds carrying
 * their transcript too (both parts: two events).
 */
export function recordingBatch(
  prefix: string,
  count: number,
  withTranscript: (i: number) => boolean = () => false,
): RecordingBatch {
  const audioIds: string[] = []
  let events = 0
  const lines = Array.from({ length: count }, (_, i) => {
    const audioId = `${prefix}-${i}`
    audioIds.push(audioId)
    const transcript = withTranscript(i)
    events += transcript ? 2 : 1
    return JSON.stringify({
      audioId,
      deviceUid: `DEV-${i % 20}`,
      title: `recording ${i}`,
      recordedAt: new Date(Date.UTC(2026, 1, 1) + i * 1000).toISOString(),
      denoiseUrl: `https://media.example/${prefix}/${i}.mp3`,
      recordDuration: 1000 + i,
      ...(transcript && {
        transcript: {
          transcriptId: i + 1,
          transcriptText: `words of ${audioId}`,
          sentences: [{ text: `words of ${audioId}`, beginTime: 0, endTime: 700 }],
          durationMs: 700,
          wordsCount: 3,
        },
      }),
    })
  }).join('\n')
  return { lines: `${lines}\n`, audioIds, events }
}

/** Imports the batch; resolves with the import's last line (its summary) or throws its error. */
export async function importRecordings(
  platform: AdminEndpoint,
  enterpriseId: number,
  batch: RecordingBatch,
): Promise<{ imported: number; skipped: number }> {
  let last: ImportLine | undefined
  for await (const line of adminClientOf(platform).importRecordings(enterpriseId, batch.lines)) last = line
  if (last && 'imported' in last) return last
  throw new Error(`the import did not finish: ${JSON.stringify(last)}`)
}

/** Every delivery of the enterprise, with its attempts (the list API, page after page). */
export async function allDeliveries(platform: AdminEndpoint, enterpriseId: number): Promise<Delivery[]> {
  const all: Delivery[] = []
  let before: number | undefined
  for (;;) {
    const deliveries = await adminClientOf(platform).listDeliveries({ enterpriseId, limit: 1000, before })
    all.push(...deliveries)
    if (deliveries.length < 1000) return all
    before = deliveries.at(-1)?.deliveryId
  }
}

/**
 * Polls `check` every `intervalMs` (failures of the check count as "not yet": the platform may be
 * restarting) until it returns a value; fails after `timeoutMs`, naming `what` and the last value seen.
 */
export async function waitFor<T>(
  what: string | (() => string),
  check: () => Promise<T | undefined | false>,
  { timeoutMs = 120_000, intervalMs = 250 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value !== undefined && value !== false) return value
      last = value
    } catch (error) {
      last = error
    }
    if (performance.now() > deadline) {
      const described = typeof what === 'string' ? what : what()
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described}; last: ${String(last)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
}

/** The states other than `state` that some delivery of the enterprise is in (one `limit=1` list call per state). */
export async function statesOtherThan(
  platform: AdminEndpoint,
  enterpriseId: number,
  state: string,
): Promise<string[]> {
  const others = await Promise.all(
    DELIVERY_STATES.filter((other) => other !== state).map(async (other) => {
      const deliveries = await adminClientOf(platform).listDeliveries({
        enterpriseId,
        state: other,
        limit: 1,
      })
      return deliveries.length > 0 ? other : undefined
    }),
  )
  return others.filter((other) => other !== undefined)
}

/**
 * Waits until the enterprise has exactly `total` deliveries, every one in `state`, and returns them
 * (with their attempts). `platform` is read on each look (it may be restarted meanwhile).
 */
export async function allInState(
  platform: () => AdminEndpoint,
  enterpriseId: number,
  state: string,
  total: number,
  options?: { timeoutMs?: number; intervalMs?: number },
): Promise<Delivery[]> {
  let seen = 'nothing yet'
  return waitFor(
    () => `all ${total} deliveries ${state} (last seen: ${seen})`,
    async () => {
      const others = await statesOtherThan(platform(), enterpriseId, state)
      if (others.length > 0) {
        seen = `some ${others.join(', ')}`
        return false
      }
      const deliveries = await allDeliveries(platform(), enterpriseId)
      const inState = deliveries.filter((delivery) => delivery.state === state).length
      seen = `${deliveries.length} deliveries, ${inState} ${state}`
      return deliveries.length === total && inState === total && deliveries
    },
    options,
  )
}

// --- a partner's push endpoint, with a ledger ---------------------------------------------------------

/** One push as the receiver got it. */
export interface LedgerPush {
  eventId: string
  headerEventId: string | undefined
  envelopeEventId: string
  audioId: string
  eventType: string
  /** The answer's code (2000 acknowledges). */
  code: number
  /**
   * The answer went out while the platform's connection was still open ('finish' before 'close'): an
   * answer to an attempt the platform had already given up on (timed out, aborted) is not delivered.
   */
  delivered: boolean
}

export interface LedgerReceiverOptions {
  /** Answer after this many ms (a slow partner). */
  answerDelayMs?: number
  /** Called once per delivered 2000 answer, like a partner starting its receipt callback. */
  onAcked?(push: LedgerPush): void
}

/** A push being handled: where its connection comes from, and since when (performance.now()). */
export interface OpenPush {
  remotePort: number
  arrivedAt: number
}

export interface LedgerReceiver {
  url: string
  pushes: LedgerPush[]
  /** Pushes being handled (received, not yet answered). */
  pending(): number
  /** The pushes being handled. */
  open(): OpenPush[]
  /** Stops listening (pushes fail to connect) until start() listens again on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
  close(): Promise<void>
}

/**
 * A partner's push endpoint on loopback: opens every push with @earshot/protocol (what does not open
 * is answered 4000), answers {"code":2000} — after `answerDelayMs` — and records each push with whether
 * its answer reached a connection still open.
 */
export async function startLedgerReceiver(
  secret: string,
  options: LedgerReceiverOptions = {},
): Promise<LedgerReceiver> {
  const key = loadKey(secret)
  const pushes: LedgerPush[] = []
  const inFlight = new Set<OpenPush>()
  let handling = 0
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const entry: OpenPush = { remotePort: request.socket.remotePort ?? 0, arrivedAt: performance.now() }
    inFlight.add(entry)
    try {
      await answer(request, response)
    } finally {
      inFlight.delete(entry)
    }
  }
  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    let event: PushEvent
    let envelopeEventId: string
    try {
      const opened = open(JSON.parse(Buffer.concat(chunks).toString('utf8')), key)
      event = PushEvent.parse(opened.plaintext)
      envelopeEventId = opened.envelope.eventId
    } catch (error) {
      response.writeHead(400, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ code: 4000, msg: (error as Error).message }))
      return
    }
    handling++
    let closed = false
    response.once('close', () => {
      closed = true
    })
    if (options.answerDelayMs) await new Promise((resolve) => setTimeout(resolve, options.answerDelayMs))
    const header = request.headers['x-earshot-event-id']
    const push: LedgerPush = {
      eventId: event.eventId,
      headerEventId: Array.isArray(header) ? header[0] : header,
      envelopeEventId,
      audioId: event.audioId,
      eventType: event.eventType,
      code: 2000,
      delivered: false,
    }
    pushes.push(push)
    handling--
    if (closed || response.destroyed) return
    response.once('finish', () => {
      if (closed) return
      push.delivered = true
      options.onAcked?.(push)
    })
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify({ code: 2000 }))
  }

  let server: Server | undefined
  let port = 0
  const start = async () => {
    const next = createServer((request, response) => {
      handle(request, response).catch(() => response.destroy())
    })
    await new Promise<void>((resolve) => next.listen(port, '127.0.0.1', resolve))
    port = (next.address() as AddressInfo).port
    server = next
  }
  const stop = async () => {
    const current = server
    server = undefined
    if (!current) return
    current.closeAllConnections()
    await new Promise<void>((resolve) => current.close(() => resolve()))
  }
  await start()
  return {
    url: `http://127.0.0.1:${port}/earshot/push`,
    pushes,
    pending: () => handling,
    open: () => [...inFlight],
    start,
    stop,
    close: stop,
  }
}

/** What a receiver's ledger says against the platform's deliveries. */
export interface LedgerReport {
  events: number
  pushes: number
  /** Pushes beyond the first of their eventId. */
  duplicates: number
  /** Deliveries whose eventId never got a delivered 2000. */
  lost: Delivery[]
  /** EventIds the receiver saw that no delivery has. */
  unknownEventIds: string[]
  /** (audioId, eventType) pairs the receiver saw under more than one eventId. */
  eventIdChanged: string[]
  /** Pushes whose header, envelope and event eventIds differ. */
  mismatchedIds: number
}

export function reconcile(deliveries: readonly Delivery[], pushes: readonly LedgerPush[]): LedgerReport {
  const known = new Map(deliveries.map((delivery) => [delivery.eventId, delivery]))
  const acked = new Set<string>()
  const perEvent = new Map<string, number>()
  const idsOf = new Map<string, Set<string>>()
  let mismatchedIds = 0
  for (const push of pushes) {
    if (push.delivered && push.code === 2000) acked.add(push.eventId)
    perEvent.set(push.eventId, (perEvent.get(push.eventId) ?? 0) + 1)
    const part = `${push.audioId} ${push.eventType}`
    idsOf.set(part, (idsOf.get(part) ?? new Set()).add(push.eventId))
    if (push.headerEventId !== push.eventId || push.envelopeEventId !== push.eventId) mismatchedIds++
  }
  return {
    events: deliveries.length,
    pushes: pushes.length,
    duplicates: pushes.length - perEvent.size,
    lost: deliveries.filter((delivery) => !acked.has(delivery.eventId)),
    unknownEventIds: [...perEvent.keys()].filter((eventId) => !known.has(eventId)),
    eventIdChanged: [...idsOf].filter(([, ids]) => ids.size > 1).map(([part]) => part),
    mismatchedIds,
  }
}

/**
 * The local ports of a process's TCP sockets (Linux: /proc/PID/fd and /proc/PID/net/tcp{,6}), so a test
 * can tell which of several platform processes a connection to its receiver comes from.
 */
export function tcpPortsOf(pid: number): Set<number> {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))
      if (match) inodes.add(match[1] as string)
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>()
  for (const table of ['tcp', 'tcp6']) {
    let text: string
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/)
      const local = fields[1]
      const inode = fields[9]
      if (local && inode && inodes.has(inode)) ports.add(Number.parseInt(local.split(':')[1] as string, 16))
    }
  }
  return ports
}

// --- the partner's receipt callbacks ----------------------------------------------------------------

export interface CallbackQueue {
  /**
   * Queues a receipt callback for the audioId (merged with one queued and not yet started); with
   * `erased`, the partner's confirmation that it erased the deleted recording.
   */
  send(audioId: string, options?: { erased?: boolean }): void
  /** Callbacks the platform answered 2000. */
  confirmed(): number
  /** Queued or in flight. */
  outstanding(): number
  /** Stops retrying; callbacks not yet confirmed are dropped. */
  stop(): void
}

/**
 * A partner's receipt callbacks: `concurrency` at a time, each retried every
 * `retryMs` until the platform answers 2000 — it may be down or restarting — and sent to whatever
 * `baseUrl()` says at the time.
 */
export function callbackQueue(
  baseUrl: () => string,
  credentials: EnterpriseCredentials,
  { concurrency = 16, retryMs = 100 }: { concurrency?: number; retryMs?: number } = {},
): CallbackQueue {
  const key = loadKey(credentials.secret)
  const queue: { audioId: string; erased: boolean }[] = []
  const queued = new Set<string>()
  let running = 0
  let confirmed = 0
  let stopped = false
  let token: string | undefined
  let counter = 0
  const post = async (path: string, body: unknown, bearer?: string) => {
    const response = await fetch(`${baseUrl()}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(bearer && { authorization: `Bearer ${bearer}` }) },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    })
    return (await response.json()) as { code: number; data?: { accessToken: string } }
  }
  const once = async ({ audioId, erased }: { audioId: string; erased: boolean }): Promise<boolean> => {
    if (!token) {
      const reply = await post('/openapi/v1/token', {
        ...seal(key, credentials.keyVersion, `cb-token-${process.pid}-${++counter}`, {}),
        enterpriseId: credentials.enterpriseId,
      })
      if (reply.code !== 2000) return false
      token = reply.data?.accessToken
    }
    const reply = await post(
      '/openapi/v1/callback',
      seal(key, credentials.keyVersion, `cb-${process.pid}-${++counter}`, { audioId, ...(erased && { erased }) }),
      token,
    )
    if (reply.code === 4010 || reply.code === 4011) token = undefined
    return reply.code === 2000
  }
  const pump = () => {
    while (!stopped && running < concurrency && queue.length > 0) {
      const callback = queue.shift() as { audioId: string; erased: boolean }
      queued.delete(`${callback.erased}:${callback.audioId}`)
      running++
      void (async () => {
        while (!stopped) {
          if (await once(callback).catch(() => false)) {
            confirmed++
            break
          }
          await new Promise((resolve) => setTimeout(resolve, retryMs))
        }
        running--
        pump()
      })()
    }
  }
  return {
    send(audioId, { erased = false } = {}) {
      if (stopped || queued.has(`${erased}:${audioId}`)) return
      queued.add(`${erased}:${audioId}`)
      queue.push({ audioId, erased })
      pump()
    },
    confirmed: () => confirmed,
    outstanding: () => running + queue.length,
    stop() {
      stopped = true
      queue.length = 0
      queued.clear()
    },
  }
}

// --- a proxy in front of the partner API ------------------------------------------------------------

/** A request the proxy holds instead of forwarding. */
export interface HeldRequest {
  path: string
  body: string
}

export interface HoldingProxy {
  /** Where to point a client instead of the partner API. */
  url: string
  /** From now on, hold the requests that `matches` (they are neither forwarded nor answered). */
  hold(matches: (request: HeldRequest) => boolean): void
  /** Forward everything again (what is held stays held). */
  pass(): void
  held(): HeldRequest[]
  /** Cuts the connections of the held requests and forgets them. */
  drop(): HeldRequest[]
  /** Requests forwarded, by path. */
  forwarded(): Record<string, number>
  close(): Promise<void>
}

/**
 * An HTTP proxy to `target()` (read on each request) that can hold requests — e.g. a partner's
 * receipt callbacks — so a test can act while they are on their way.
 */
export async function startHoldingProxy(target: () => string): Promise<HoldingProxy> {
  let matches: ((request: HeldRequest) => boolean) | undefined
  let held: { request: HeldRequest; response: ServerResponse }[] = []
  const forwarded: Record<string, number> = {}
  const server = createServer((request, response) => {
    void (async () => {
      const chunks: Buffer[] = []
      for await (const chunk of request) chunks.push(chunk as Buffer)
      const body = Buffer.concat(chunks)
      const path = (request.url ?? '/').split('?', 1)[0] as string
      const seen: HeldRequest = { path, body: body.toString('utf8') }
      if (matches?.(seen)) {
        held.push({ request: seen, response })
        return
      }
      const headers: Record<string, string> = {}
      for (const name of ['content-type', 'authorization', 'accept']) {
        const value = request.headers[name]
        if (typeof value === 'string') headers[name] = value
      }
      const answer = await fetch(`${target()}${request.url}`, {
        method: request.method ?? 'GET',
        headers,
        ...(body.length > 0 && { body }),
      })
      const text = Buffer.from(await answer.arrayBuffer())
      forwarded[path] = (forwarded[path] ?? 0) + 1
      response.writeHead(answer.status, {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
      })
      response.end(text)
    })().catch(() => response.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    hold(predicate) {
      matches = predicate
    },
    pass() {
      matches = undefined
    },
    held: () => held.map((entry) => entry.request),
    drop() {
      const dropped = held
      held = []
      for (const entry of dropped) entry.response.destroy()
      return dropped.map((entry) => entry.request)
    },
    forwarded: () => ({ ...forwarded }),
    async close() {
      for (const entry of held) entry.response.destroy()
      held = []
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
