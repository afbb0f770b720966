/**
 * Samples another process's resident set (VmRSS in /proc/<pid>/status) every few milliseconds, in a
 * worker thread of its own: the samples keep their pace while the bench's main thread is busy generating
 * and sending an upload.
 */
import { readFileSync } from 'node:fs'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'

export interface RssPeak {
  /** The largest VmRSS seen, bytes. */
  peakBytes: number
  samples: number
  /** The longest time between two samples, ms. */
  longestGapMs: number
}

/** VmRSS of `pid`, bytes. */
export function vmRssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!match) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(match[1]) * 1024
}

interface SamplerData {
  rssSampler: { pid: number; intervalMs: number }
}

/** Starts sampling `pid` now; `stop` takes a last sample and resolves with the peak. */
export function startRssSampler(pid: number, intervalMs: number): { stop(): Promise<RssPeak> } {
  const worker = new Worker(new URL(import.meta.url), {
    workerData: { rssSampler: { pid, intervalMs } } satisfies SamplerData,
  })
  const failed = new Promise<never>((_, reject) => worker.once('error', reject))
  return {
    async stop() {
      const peak = new Promise<RssPeak>((resolve) => worker.once('message', resolve))
      worker.postMessage('stop')
      const result = await Promise.race([peak, failed])
      await worker.terminate()
      return result
    },
  }
}

if (!isMainThread && (workerData as Partial<SamplerData> | undefined)?.rssSampler) {
  const { pid, intervalMs } = (workerData as SamplerData).rssSampler
  let peakBytes = 0
  let samples = 0
  let longestGapMs = 0
  let last = performance.now()
  const sample = () => {
    const now = performance.now()
    if (samples > 0) longestGapMs = Math.max(longestGapMs, now - last)
    last = now
    peakBytes = Math.max(peakBytes, vmRssBytes(pid))
    samples++
  }
  sample()
  const timer = setInterval(sample, intervalMs)
  parentPort?.once('message', () => {
    clearInterval(timer)
    sample()
    parentPort?.postMessage({ peakBytes, samples, longestGapMs } satisfies RssPeak)
  })
}
