/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and sums its samples' time by function (self time): where a
 * process spent its CPU, for the media benchmark's notes.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { format, log } from '../bench-support.js'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  startTime: number
  endTime: number
  samples: number[]
  timeDeltas: number[]
}

export interface SelfTime {
  /** The function's name and where it is (package or file, line). */
  name: string
  /** Share of the sampled time not spent idle, 0..1. */
  share: number
  milliseconds: number
}

export interface ProfileSummary {
  /** Length of the part of the profile summed, and the share of it spent idle (waiting for I/O), 0..1. */
  seconds: number
  idleShare: number
  top: SelfTime[]
  /** Self time summed by where the code lives (node internals, a package, the platform, V8). */
  areas: SelfTime[]
}

/** Where a function lives: `node:stream`, a package's name, the platform's file, or a V8 pseudo-frame. */
function placeOf(url: string): string {
  if (url === '') return ''
  if (url.startsWith('node:')) return url
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url)
  if (inPackage) return `${inPackage[1]}/${inPackage[2]}`
  const inRepo = /packages\/([^/]+)\/dist\/(.*)$/.exec(url)
  if (inRepo) return `@earshot/${inRepo[1]}/${inRepo[2]}`
  return url.replace(/^file:\/\//, '')
}

function areaOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  if (url.startsWith('node:')) return 'Node internals (node:*)'
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (inPackage) return inPackage[1] as string
  const inRepo = /packages\/([^/]+)\/dist\//.exec(url)
  if (inRepo) return `@earshot/${inRepo[1]}`
  return 'other'
}

/**
 * The self time of each function in the samples taken within `window` (µs on the system's monotonic
 * clock, which V8 times its samples with; the whole profile without it).
 */
export function summarizeProfile(
  file: string,
  window?: { from: number; to: number },
  topCount = 12,
): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const micros = new Map<number, number>()
  // timeDeltas[i] is the time since the previous sample: it is charged to sample i's function.
  let at = profile.startTime
  for (const [i, id] of profile.samples.entries()) {
    const delta = profile.timeDeltas[i] ?? 0
    at += delta
    if (window && (at < window.from || at > window.to)) continue
    micros.set(id, (micros.get(id) ?? 0) + delta)
  }
  const functions = new Map<string, number>()
  const areas = new Map<string, number>()
  let idle = 0
  let total = 0
  for (const [id, time] of micros) {
    const { functionName, url, lineNumber } = (byId.get(id) as ProfileNode).callFrame
    total += time
    if (functionName === '(idle)') {
      idle += time
      continue
    }
    const place = placeOf(url)
    const name = `${functionName || '(anonymous)'}${place ? ` (${place}:${lineNumber + 1})` : ''}`
    functions.set(name, (functions.get(name) ?? 0) + time)
    const area = areaOf(url, functionName)
    areas.set(area, (areas.get(area) ?? 0) + time)
  }
  const busy = total - idle
  const ranked = (times: Map<string, number>, count: number) =>
    [...times]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, time]) => ({ name, share: time / busy, milliseconds: time / 1000 }))
  return {
    seconds: total / 1e6,
    idleShare: total > 0 ? idle / total : 0,
    top: ranked(functions, topCount),
    areas: ranked(areas, 8).filter(({ share }) => share >= 0.001),
  }
}

/** The top self-time functions of the CPU profile (`--cpu-prof-dir`) in `dir`, logged. */
export function logProfile(dir: string): void {
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'))
  if (!file) {
    log(`no CPU profile in ${dir}`)
    return
  }
  const summary = summarizeProfile(join(dir, file), undefined, 25)
  log(
    `CPU profile ${join(dir, file)}: ${format(summary.seconds, 1)} s, ${format(100 * summary.idleShare)}% idle`,
  )
  for (const area of summary.areas) log(`  ${format(100 * area.share, 1)}% ${area.name}`)
  for (const top of summary.top)
    log(`  ${format(100 * top.share, 1)}% ${format(top.milliseconds)} ms ${top.name}`)
}
