/**
 * What the benchmarks share (platform.bench.ts, push.bench.ts, receiver.bench.ts): settings read from the environment, number formatting,
 * progress lines, the run over the backends, the section written to docs/benchmarks.md, and the
 * cleanups run on the way out as on Ctrl-C.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { BENCHMARKS_DOC, type SectionPlacement, writeMarkdownSection } from './markdown-section.js'

export type Backend = 'pglite' | 'postgres'

/** The whole number in the environment variable `name`, at least `min`; `fallback` when unset or empty. */
export function integerSetting(name: string, fallback: number, min = 1): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new Error(`${name} must be a whole number ≥ ${min}`)
  return Number(raw)
}

/** The backends named in BENCH_BACKENDS, comma separated (default `fallback`, else `pglite,postgres`). */
export function backendsSetting(fallback = 'pglite,postgres'): Backend[] {
  return (process.env.BENCH_BACKENDS || fallback)
    .split(',')
    .map((name) => name.trim())
    .map((name) => {
      if (name !== 'pglite' && name !== 'postgres') throw new Error(`BENCH_BACKENDS: unknown backend ${name}`)
      return name
    })
}

/** `n` with thousands separators and `digits` decimals; `–` when it is not finite. */
export const format = (n: number, digits = 0) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : '–'
/** Milliseconds: two decimals below 10, one above. */
export const ms = (n: number) => format(n, n < 10 ? 2 : 1)
/** A progress line, on stderr (stdout carries the section). */
export const log = (line: string) => process.stderr.write(`${line}\n`)
/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const half = Math.floor(sorted.length / 2)
  if (sorted.length === 0) return Number.NaN
  return sorted.length % 2 === 1
    ? (sorted[half] as number)
    : ((sorted[half - 1] as number) + (sorted[half] as number)) / 2
}
/** The nearest-rank percentile (p from 0 to 1); NaN for none. */
export const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.ceil(p * values.length) - 1] ?? Number.NaN

/** Whether a target holds, in bold. */
export const yes = (holds: boolean) => (holds ? '**yes**' : '**NO**')

/** The machine a section was measured on: cores, CPU model, Node version and today's date. */
export function machineLine(): string {
  return `${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`
}

/** Measures each backend in turn; PostgreSQL is skipped, and said so, when DATABASE_URL is not set. */
export async function measureBackends<Report>(
  backends: Backend[],
  measure: (backend: Backend) => Promise<Report>,
): Promise<{ reports: Report[]; skipped: string[] }> {
  const reports: Report[] = []
  const skipped: string[] = []
  for (const backend of backends) {
    if (backend === 'postgres' && !process.env.DATABASE_URL) {
      skipped.push('PostgreSQL skipped: DATABASE_URL is not set.')
      log('postgres: skipped, DATABASE_URL is not set')
      continue
    }
    reports.push(await measure(backend))
  }
  return { reports, skipped }
}

/** A section of blank-line separated paragraphs (the backends' parts among them), then the backends skipped. */
export function sectionText(paragraphs: string[], skipped: string[]): string {
  return [...paragraphs.flatMap((paragraph) => [paragraph, '']), ...skipped.map((line) => `${line}\n`)]
    .join('\n')
    .trimEnd()
}

/** Prints the section on stdout and writes it to docs/benchmarks.md between the markers of `name`. */
export function publishSection(name: string, section: string, placement: SectionPlacement): void {
  console.log(section)
  writeMarkdownSection(BENCHMARKS_DOC, name, section, placement)
  console.log(`\nwritten to ${BENCHMARKS_DOC.pathname}`)
}

// Children, scratch databases and data directories are cleaned up on Ctrl-C as on the way out.
const cleanups = new Set<() => Promise<void>>()
let cleaningUpOnInterrupt = false

/** From now on, Ctrl-C runs the cleanups of the withCleanup calls under way, then exits with 130. */
export function cleanUpOnInterrupt(): void {
  if (cleaningUpOnInterrupt) return
  cleaningUpOnInterrupt = true
  process.once('SIGINT', () => {
    log('\ninterrupted: stopping children and dropping scratch databases')
    void Promise.allSettled([...cleanups].map((cleanup) => cleanup())).then(() => process.exit(130))
  })
}

/** Runs `fn`, then `cleanup`; on Ctrl-C while `fn` runs, `cleanup` runs then (see cleanUpOnInterrupt). */
export async function withCleanup<T>(cleanup: () => Promise<void>, fn: () => Promise<T>): Promise<T> {
  cleanups.add(cleanup)
  try {
    return await fn()
  } finally {
    cleanups.delete(cleanup)
    await cleanup()
  }
}

/**
 * CPU seconds used so far by the processes of this machine named `postgres` (the server's backends and
 * helpers), from /proc: meaningful when the benchmark's PostgreSQL runs here. Undefined without /proc.
 * Processes that ended between two readings are not counted, so a difference can only understate.
 */
export function postgresCpuSeconds(): number | undefined {
  const ticks = postgresCpuTicks()
  return ticks && [...ticks.values()].reduce((sum, n) => sum + n, 0) / CLOCK_TICKS_PER_SECOND
}

/** The clock ticks (utime + stime) used so far by each process of this machine named `postgres`, by pid. */
export function postgresCpuTicks(): Map<number, number> | undefined {
  let pids: string[]
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  } catch {
    return undefined
  }
  const ticks = new Map<number, number>()
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      // pid (comm) state ppid ...: utime and stime are the 14th and 15th fields.
      const close = stat.lastIndexOf(')')
      if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue
      const fields = stat.slice(close + 2).split(' ')
      ticks.set(Number(pid), Number(fields[11]) + Number(fields[12]))
    } catch {
      // The process ended meanwhile.
    }
  }
  return ticks
}

/** USER_HZ: the unit of /proc's CPU times on Linux. */
const CLOCK_TICKS_PER_SECOND = 100
