/**
 * Counts this process's garbage collections (main thread) from the `gc` performance entries, and answers
 * the parent's "gc" request with the counts so far: how many full (mark-compact) and young-generation
 * collections there were, and the main thread's time in them.
 */
import { constants, PerformanceObserver } from 'node:perf_hooks'

export interface GcCounts {
  type: 'gc'
  /** Mark-compact collections of the whole heap. */
  major: number
  /** Scavenges of the young generation. */
  minor: number
  /** Milliseconds the main thread spent in collections (incremental steps included). */
  milliseconds: number
}

export function answerGcCounts(): void {
  const counts: GcCounts = { type: 'gc', major: 0, minor: 0, milliseconds: 0 }
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) counts.major++
      else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) counts.minor++
      counts.milliseconds += entry.duration
    }
  }).observe({ entryTypes: ['gc'] })
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'gc') process.send?.({ ...counts })
  })
}
