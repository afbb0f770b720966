/**
 * The load generator: autocannon, fed from a pool of request bodies prepared before the measured run so
 * that sealing does not compete with the server for CPU during it. Every request the platform gets
 * carries a fresh envelope (it refuses a reused nonce with 4090): a pool is used once, and when it runs
 * dry further bodies are sealed on the spot and counted.
 */
import type { PartnerOperationSpec } from '@earshot/protocol'
import autocannon from 'autocannon'
import type { ChildUsage } from '../child.js'

export interface PreparedRequest {
  body: Buffer
  headers: Record<string, string>
}

export class RequestPool {
  private items: (PreparedRequest | undefined)[] = []
  private next = 0
  /** Bodies made during a run because the pool ran dry. */
  madeLive = 0

  /** `reusable`: the server does not care about nonces (the baseline), so the pool is cycled. */
  constructor(
    private readonly make: () => PreparedRequest,
    readonly reusable = false,
  ) {}

  fill(size: number): void {
    this.items = Array.from({ length: size }, this.make)
    this.next = 0
    this.madeLive = 0
  }

  take(): PreparedRequest {
    if (this.reusable && this.next === this.items.length) this.next = 0
    const item = this.items[this.next]
    if (item === undefined) {
      this.madeLive++
      return this.make()
    }
    // A used body is dropped at once: the platform would refuse it again.
    if (!this.reusable) this.items[this.next] = undefined
    this.next++
    return item
  }
}

export interface LoadResult {
  seconds: number
  responses: number
  requestsPerSecond: number
  p50: number
  p99: number
  /** Every response that is not HTTP 2xx with code 2000, plus connection errors and timeouts. */
  errors: number
  non2xx: number
  /** 2xx responses whose body does not start with `{"code":2000,` (all checked) or fails a full parse (sampled). */
  wrongCode: number
  connectionErrors: number
  timeouts: number
  /** Failures by response code (or HTTP status when the body is not JSON). */
  failureCodes: Record<string, number>
  failureSamples: string[]
  madeLive: number
}

const OK_PREFIX = '{"code":2000,'
/** One 2xx body in this many is parsed in full, besides the prefix check every response gets. */
const PARSE_EVERY = 100

export async function runLoad(options: {
  url: string
  /** The operation's method and path, as its contract gives them. */
  method: PartnerOperationSpec['method']
  path: string
  connections: number
  seconds: number
  pool: RequestPool
}): Promise<LoadResult> {
  const { pool } = options
  let latencies = new Float64Array(1 << 16)
  let responses = 0
  let non2xx = 0
  let wrongCode = 0
  let okSeen = 0
  const failureCodes: Record<string, number> = {}
  const failureSamples: string[] = []
  const fail = (key: string, body: string) => {
    failureCodes[key] = (failureCodes[key] ?? 0) + 1
    if (failureSamples.length < 3) failureSamples.push(body.slice(0, 300))
  }

  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.seconds,
        timeout: 30,
        requests: [
          {
            method: options.method,
            path: options.path,
            headers: { 'content-type': 'application/json' },
            setupRequest: (request) => {
              const { body, headers } = pool.take()
              request.body = body
              request.headers = { ...request.headers, ...headers }
              return request
            },
            onResponse: (status, body) => {
              if (status < 200 || status > 299) {
                non2xx++
                let code = `HTTP ${status}`
                try {
                  code = String((JSON.parse(body) as { code?: unknown }).code ?? code)
                } catch {}
                fail(code, body)
                return
              }
              if (!body.startsWith(OK_PREFIX)) {
                wrongCode++
                fail(`HTTP ${status}, body not code 2000`, body)
              } else if (++okSeen % PARSE_EVERY === 0) {
                try {
                  if ((JSON.parse(body) as { code?: unknown }).code !== 2000) throw new Error('not 2000')
                } catch {
                  wrongCode++
                  fail(`HTTP ${status}, body not code 2000`, body)
                }
              }
            },
          },
        ],
      },
      (error: unknown, done: autocannon.Result) => (error ? reject(error) : resolve(done)),
    )
    instance.on('response', (_client, _status, _bytes, milliseconds) => {
      if (responses === latencies.length) {
        const grown = new Float64Array(latencies.length * 2)
        grown.set(latencies)
        latencies = grown
      }
      latencies[responses++] = milliseconds
    })
  })

  const sorted = latencies.subarray(0, responses).sort()
  const percentile = (p: number) =>
    responses === 0
      ? Number.NaN
      : (sorted[Math.min(responses - 1, Math.ceil((p / 100) * responses) - 1)] ?? 0)
  const connectionErrors = result.errors - result.timeouts
  return {
    seconds: result.duration,
    responses,
    requestsPerSecond: responses / result.duration,
    p50: percentile(50),
    p99: percentile(99),
    errors: non2xx + wrongCode + result.errors,
    non2xx,
    wrongCode,
    connectionErrors,
    timeouts: result.timeouts,
    failureCodes,
    failureSamples,
    madeLive: pool.madeLive,
  }
}

export interface ScenarioResult extends LoadResult {
  /** CPU time of the server process (and of PGlite, which runs inside it) over the measured run, % of one core. */
  serverCpuPercent: number
  /** CPU time of the load generator's process over the measured run, % of one core. */
  generatorCpuPercent: number
  warmupErrors: number
}

/**
 * A warm-up run (JIT, connection pools, caches) whose rate sizes the pool of the measured run, then the
 * measured run. Errors of the warm-up are reported with the measured ones.
 */
export async function runScenario(options: {
  url: string
  method: PartnerOperationSpec['method']
  path: string
  connections: number
  seconds: number
  warmupSeconds: number
  pool: RequestPool
  /**
   * The most requests/s the server could answer (the bare baseline's rate; none of the servers here is
   * faster): the measured run's pool holds at least this many seconds' worth, so that it does not run
   * dry when the warm-up, still compiling, ran much slower than the measured run.
   */
  ceilingRate?: number
  /** The server's CPU time, read before and after the measured run. */
  serverUsage: () => Promise<ChildUsage>
}): Promise<ScenarioResult> {
  const { pool } = options
  pool.fill(pool.reusable ? 4096 : 2000)
  const warmup = await runLoad({ ...options, seconds: options.warmupSeconds })
  if (!pool.reusable) {
    const rate = Math.max(warmup.requestsPerSecond * 1.5, options.ceilingRate ?? 0)
    pool.fill(Math.ceil(rate * options.seconds) + 2000)
  }
  const serverBefore = await options.serverUsage()
  const generatorBefore = process.cpuUsage()
  const measured = await runLoad(options)
  const generatorCpu = process.cpuUsage(generatorBefore)
  const serverAfter = await options.serverUsage()
  pool.fill(0)
  const percentOfRun = (micros: number) => micros / 10_000 / measured.seconds
  return {
    ...measured,
    serverCpuPercent: percentOfRun(serverAfter.cpuMicros - serverBefore.cpuMicros),
    generatorCpuPercent: percentOfRun(generatorCpu.user + generatorCpu.system),
    warmupErrors: warmup.errors,
    failureCodes: mergeCounts(warmup.failureCodes, measured.failureCodes),
    failureSamples: [...measured.failureSamples, ...warmup.failureSamples].slice(0, 3),
  }
}

function mergeCounts(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const merged = { ...a }
  for (const [key, value] of Object.entries(b)) merged[key] = (merged[key] ?? 0) + value
  return merged
}
