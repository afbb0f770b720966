/**
 * The benchmark's data set: deterministic (a fixed seed, one random stream per enterprise), so every run
 * of a given scale holds the same recordings.
 *
 * - Layout `spread`: recordings are shared out evenly over the enterprises; device d belongs to
 *   enterprise d mod E. Layout `first`: every recording and every device belongs to the first
 *   enterprise; the others hold none.
 * - In each enterprise holding recordings, 1% of the devices (at least one) are "busy": together they
 *   hold BUSY_SHARE of the enterprise's recordings; the rest is spread uniformly over the other devices.
 *   At 1,000,000 recordings over 5,000 devices (either layout) that is ~2,000 recordings a year per busy
 *   device and ~180 per other device.
 * - recordedAt is uniform over the year 2025 (UTC).
 * - 70% have audio and transcript (set A), 20% audio only (set B), 10% transcript only (set A).
 */

import type { NewRecording } from '@earshot/platform/internal'
import { samplePhrases, sampleTopics } from '@earshot/platform/internal'
import type { TranscriptSentence } from '@earshot/protocol'

export interface DatasetPlan {
  recordings: number
  enterprises: number
  devices: number
  seed: number
  layout: 'spread' | 'first'
}

export const DEFAULT_SEED = 0x5eed_2025
export const YEAR_START_MS = Date.UTC(2025, 0, 1)
export const YEAR_MS = 365 * 86_400_000
export const BUSY_SHARE = 0.1
const BUSY_DEVICE_FRACTION = 0.01

/** The time range of the filtered queries: 2025-02-01 to 2025-11-01, three quarters of the year. */
export const QUERY_RANGE = { startTime: '2025-02-01T00:00:00Z', endTime: '2025-11-01T00:00:00Z' } as const
/**
 * The window of the time-only total: the same months in India's time (+05:30), so that both edges cut
 * a UTC day and an hour, and part of the total is counted row by row.
 */
export const TOTAL_WINDOW = {
  startTime: '2025-02-01T00:00:00+05:30',
  endTime: '2025-11-01T00:00:00+05:30',
} as const

/** mulberry32: small, fast, and good enough to spread benchmark data. */
export function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** How many enterprises hold recordings: the first ones. */
const holders = (plan: DatasetPlan) => (plan.layout === 'first' ? 1 : plan.enterprises)

/** How many of the plan's recordings enterprise index e (0-based) holds. */
export function recordingsOf(plan: DatasetPlan, e: number): number {
  const n = holders(plan)
  if (e >= n) return 0
  return Math.floor(plan.recordings / n) + (e < plan.recordings % n ? 1 : 0)
}

/** The device UIDs of enterprise index e, busy ones first (none for an enterprise without recordings). */
export function devicesOf(plan: DatasetPlan, e: number): { busy: string[]; other: string[] } {
  const n = holders(plan)
  const all: string[] = []
  if (e < n) for (let d = e; d < plan.devices; d += n) all.push(`EAR-${String(d).padStart(6, '0')}`)
  const busyCount = Math.max(1, Math.round(all.length * BUSY_DEVICE_FRACTION))
  return { busy: all.slice(0, busyCount), other: all.slice(busyCount) }
}

export function checkPlan(plan: DatasetPlan): void {
  if (plan.enterprises < 1 || plan.recordings < holders(plan)) {
    throw new Error(
      'BENCH_ENTERPRISES must be at least 1, and the recordings at least the enterprises holding them',
    )
  }
  if (plan.devices < 2 * holders(plan)) {
    throw new Error(
      'BENCH_DEVICES must be at least twice the enterprises holding recordings (a busy and a quiet device each)',
    )
  }
}

/**
 * The recordings of enterprise index e, generated lazily in chunks of `chunkSize` (the same recordings
 * whatever the chunk size); only those numbered from `from` (the ones before are generated and dropped)
 * to before `to`, so that a data set can be stored in stages.
 */
export function* recordingChunks(
  plan: DatasetPlan,
  e: number,
  chunkSize: number,
  from = 0,
  to = recordingsOf(plan, e),
): Generator<NewRecording[], void, void> {
  const random = prng((plan.seed ^ Math.imul(e + 1, 0x9e3779b1)) >>> 0)
  const { busy, other } = devicesOf(plan, e)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T
  const idBytes = Buffer.alloc(12)
  let chunk: NewRecording[] = []
  for (let j = 0; j < to; j++) {
    // 8 random bytes, then enterprise and sequence number: random-looking, and unique by construction.
    idBytes.writeUInt32BE(Math.floor(random() * 4_294_967_296), 0)
    idBytes.writeUInt32BE(Math.floor(random() * 4_294_967_296), 4)
    idBytes.writeUInt32BE((e * 0x1000000 + j) >>> 0, 8)
    const audioId = `aud_${idBytes.toString('base64url')}`
    const deviceUid = random() < BUSY_SHARE ? pick(busy) : pick(other)
    const recordedAt = new Date(YEAR_START_MS + Math.floor(random() * YEAR_MS)).toISOString()
    const durationMs = 10_000 + Math.floor(random() * 1_790_000)
    const kind = random()
    const recording: NewRecording = {
      audioId,
      deviceUid,
      title: `${pick(sampleTopics)} #${1 + Math.floor(random() * 999)}`,
      recordedAt,
    }
    if (kind < 0.9) {
      recording.denoiseUrl = `https://media.example.com/denoised/${audioId}.wav`
      recording.recordDuration = Math.round(durationMs / 1000)
    }
    if (kind < 0.7 || kind >= 0.9) {
      const sentences: TranscriptSentence[] = [0, 1].map((s) => ({
        text: pick(samplePhrases),
        beginTime: s * 4000,
        endTime: s * 4000 + 3500,
      }))
      recording.transcript = {
        transcriptId: e * 100_000_000 + j + 1,
        transcriptText: sentences.map((sentence) => sentence.text).join(' '),
        sentences,
        durationMs,
        wordsCount: Math.round(durationMs / 400),
      }
    }
    if (j < from) continue
    chunk.push(recording)
    if (chunk.length === chunkSize) {
      yield chunk
      chunk = []
    }
  }
  if (chunk.length > 0) yield chunk
}
