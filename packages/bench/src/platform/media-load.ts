/**
 * The media benchmark's load generator: `connections` loops over one undici Pool, each with one GET in
 * flight at a time, for a warm-up then a measured run without a pause between them. A GET asks for a
 * random window of the file (`Range: bytes=a-b`, a seeded sequence) or for the whole file. Bodies are
 * counted as they arrive and never held: MiB/s is the bytes received in the measured run over its length,
 * requests/s the responses completed in it (those still in flight at its end are cut off).
 *
 * Every response is checked (status 206 or 200, Content-Length, Content-Range, the byte count); every
 * `verifyEvery`-th is also hashed as it streams, its SHA-256 compared with that of the same bytes of the
 * file. Not autocannon: it appends each body to a string (UTF-8 decoding megabytes per response in
 * JavaScript), which would make the generator the bottleneck, and the bytes could not be checked.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { PartnerOperation } from '@earshot/protocol'
import { Pool } from 'undici'
import type { ChildUsage } from '../child.js'
import type { GcCounts } from './gc-counter.js'

/** A stored file is read as a partner reads it: the media fetch, its method from the contract. */
const { fetchAudio } = PartnerOperation

export interface MediaLoadSpec {
  /** The file's URL (its path and query are sent as they are). */
  url: string
  /** The file's bytes, to check the answers against. */
  file: Buffer
  fileSha256: string
  /** Bytes of each random window; undefined: the whole file. */
  window: number | undefined
  connections: number
  warmupSeconds: number
  seconds: number
  /** Seeds the windows' offsets: the same seed asks for the same windows in the same order. */
  seed: number
  verifyEvery: number
  /** The server's CPU time, read at the start and the end of the measured run. */
  serverUsage: () => Promise<ChildUsage>
  /** The server's process id: its main thread's CPU time is read from /proc. */
  serverPid: number
  /** The server's garbage collections so far, read with its CPU time. */
  serverGc: () => Promise<GcCounts>
}

export interface MediaLoadResult {
  seconds: number
  bytes: number
  responses: number
  mibPerSecond: number
  requestsPerSecond: number
  /** Latency of the responses completed in the measured run, first byte asked to last byte read, ms. */
  p50: number
  p99: number
  /** Responses whose SHA-256 was compared (warm-up included), and found equal. */
  verified: number
  /** Responses that failed a check or a request (warm-up included). */
  errors: number
  failureSamples: string[]
  serverCpuPercent: number
  /** The server's main thread (event loop) alone, % of one core (NaN without /proc). */
  serverMainThreadCpuPercent: number
  generatorCpuPercent: number
  /** The server's garbage collections over the measured run, per second: full, young generation, ms. */
  serverGc: { majorPerSecond: number; minorPerSecond: number; msPerSecond: number }
  /** CPU time of every process on the machine over the measured run, % of one core (NaN without /proc). */
  machineCpuPercent: number
  /** The measured run on the system's monotonic clock (as V8's CPU profiles time their samples), µs. */
  monotonicMicros: { from: number; to: number }
}

const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n)

/** CPU seconds used so far by thread `tid` of process `pid` (the main thread when they are equal); NaN without /proc. */
function threadCpuSeconds(pid: number, tid = pid): number {
  try {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
    // pid (comm) state …: utime and stime are the 14th and 15th fields, in USER_HZ.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
}

/** CPU seconds the whole machine has been busy (every process, the kernel's own work included); NaN without /proc. */
function machineBusySeconds(): number {
  try {
    // cpu  user nice system idle iowait irq softirq steal …, in USER_HZ (1/100 s).
    const fields = readFileSync('/proc/stat', 'utf8')
      .split('\n', 1)[0]
      ?.trim()
      .split(/\s+/)
      .slice(1)
      .map(Number)
    if (!fields || fields.length < 8) return Number.NaN
    const [user, nice, system, , , irq, softirq, steal] = fields as number[]
    return (
      ((user as number) +
        (nice as number) +
        (system as number) +
        (irq as number) +
        (softirq as number) +
        (steal as number)) /
      100
    )
  } catch {
    return Number.NaN
  }
}

/** Mulberry32: a small seeded generator of numbers in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** What the loops have seen so far; only the measured run's responses count and are timed. */
interface Tally {
  bytes: number
  responses: number
  sent: number
  verified: number
  errors: number
  failureSamples: string[]
  latencies: number[]
  measuring: boolean
  stopping: boolean
}

const failed = (tally: Tally, problem: string) => {
  tally.errors++
  if (tally.failureSamples.length < 3) tally.failureSamples.push(problem)
}

/** One GET of a window (or of the whole file), every response checked, every verifyEvery-th hashed. */
function windowRequester(spec: MediaLoadSpec, pool: Pool, tally: Tally): () => Promise<void> {
  const target = new URL(spec.url)
  const path = `${target.pathname}${target.search}`
  const size = spec.file.length
  const window = spec.window === undefined ? undefined : Math.min(spec.window, size)
  const random = seeded(spec.seed)
  return () =>
    new Promise<void>((resolve) => {
      const start = window === undefined ? 0 : Math.floor(random() * (size - window + 1))
      const end = window === undefined ? size - 1 : start + window - 1
      const expected = end - start + 1
      const hash = tally.sent++ % spec.verifyEvery === 0 ? createHash('sha256') : undefined
      const began = performance.now()
      let received = 0
      let problem: string | undefined
      pool.dispatch(
        {
          path,
          method: fetchAudio.method,
          headers: window === undefined ? {} : { range: `bytes=${start}-${end}` },
        },
        {
          // Its presence marks the handler as undici's current kind (else the deprecated callbacks are used).
          onRequestStart() {},
          onResponseStart(_controller, status, headers) {
            const want = window === undefined ? 200 : 206
            const range = `bytes ${start}-${end}/${size}`
            if (status !== want) problem = `HTTP ${status} (expected ${want})`
            else if (Number(headers['content-length']) !== expected)
              problem = `Content-Length ${headers['content-length']} (expected ${expected})`
            else if (window !== undefined && headers['content-range'] !== range)
              problem = `Content-Range ${headers['content-range']} (expected ${range})`
          },
          onResponseData(_controller, chunk) {
            tally.bytes += chunk.length
            received += chunk.length
            hash?.update(chunk)
          },
          onResponseEnd() {
            if (problem === undefined && received !== expected)
              problem = `${received} bytes received (expected ${expected})`
            if (problem === undefined && hash) {
              const want =
                window === undefined
                  ? spec.fileSha256
                  : createHash('sha256')
                      .update(spec.file.subarray(start, end + 1))
                      .digest('hex')
              if (hash.digest('hex') === want) tally.verified++
              else problem = `bytes ${start}-${end}: SHA-256 differs from the file's`
            }
            if (problem !== undefined) failed(tally, problem)
            if (tally.measuring) {
              tally.responses++
              tally.latencies.push(performance.now() - began)
            }
            resolve()
          },
          onResponseError(_controller, error) {
            if (!tally.stopping) failed(tally, `bytes ${start}-${end}: ${error.message}`)
            resolve()
          },
        },
      )
    })
}

/** The CPU and GC readings around the measured run. */
async function readUsage(spec: MediaLoadSpec) {
  const generator = process.cpuUsage()
  const machineBusy = machineBusySeconds()
  const mainThread = threadCpuSeconds(spec.serverPid)
  const [server, gc] = await Promise.all([spec.serverUsage(), spec.serverGc()])
  return { generator, machineBusy, mainThread, server, gc }
}

export async function runMediaLoad(spec: MediaLoadSpec): Promise<MediaLoadResult> {
  const pool = new Pool(new URL(spec.url).origin, { connections: spec.connections, pipelining: 1 })
  const tally: Tally = {
    bytes: 0,
    responses: 0,
    sent: 0,
    verified: 0,
    errors: 0,
    failureSamples: [],
    latencies: [],
    measuring: false,
    stopping: false,
  }
  const request = windowRequester(spec, pool, tally)
  const loop = async () => {
    while (!tally.stopping) await request()
  }
  const loops = Array.from({ length: spec.connections }, loop)
  await sleep(spec.warmupSeconds * 1000)

  tally.measuring = true
  const startBytes = tally.bytes
  const startedAt = performance.now()
  const from = monotonicMicros()
  const before = await readUsage(spec)
  await sleep(Math.max(0, spec.seconds * 1000 - (performance.now() - startedAt)))
  tally.measuring = false
  const to = monotonicMicros()
  const measuredBytes = tally.bytes - startBytes
  const seconds = (performance.now() - startedAt) / 1000
  const after = await readUsage(spec)
  tally.stopping = true
  // The responses still in flight are cut off (and not counted): destroying the pool ends them.
  await Promise.all([pool.destroy(), ...loops])

  const latencies = tally.latencies.sort((a, b) => a - b)
  const at = (q: number) => latencies[Math.max(0, Math.ceil(latencies.length * q) - 1)] ?? Number.NaN
  const percentOfRun = (micros: number) => micros / 10_000 / seconds
  return {
    seconds,
    bytes: measuredBytes,
    responses: tally.responses,
    mibPerSecond: measuredBytes / 2 ** 20 / seconds,
    requestsPerSecond: tally.responses / seconds,
    p50: at(0.5),
    p99: at(0.99),
    verified: tally.verified,
    errors: tally.errors,
    failureSamples: tally.failureSamples,
    serverCpuPercent: percentOfRun(after.server.cpuMicros - before.server.cpuMicros),
    generatorCpuPercent: percentOfRun(
      after.generator.user + after.generator.system - before.generator.user - before.generator.system,
    ),
    serverMainThreadCpuPercent: (100 * (after.mainThread - before.mainThread)) / seconds,
    serverGc: {
      majorPerSecond: (after.gc.major - before.gc.major) / seconds,
      minorPerSecond: (after.gc.minor - before.gc.minor) / seconds,
      msPerSecond: (after.gc.milliseconds - before.gc.milliseconds) / seconds,
    },
    machineCpuPercent: (100 * (after.machineBusy - before.machineBusy)) / seconds,
    monotonicMicros: { from, to },
  }
}
