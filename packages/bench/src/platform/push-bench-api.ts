/**
 * What the push benchmarks (push.bench.ts, push-endpoints.bench.ts) do over HTTP: enterprises and their
 * endpoints made through the admin client and registered with the receiver (push-bench-receiver.ts),
 * recordings imported as JSON Lines, and the receiver's counts polled until a run's pushes are confirmed.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { AdminClient, type ImportLine, type NewEndpoint } from '@earshot/platform/admin-client'
import { format, log } from '../bench-support.js'
import type { ReceiverProgress, ReceiverRegistration } from './push-bench-receiver.js'
import type { PushPlatformReady } from './push-platform.js'

/** A run with no new push or confirmation for this long is given up. */
export const STALL_MS = 30_000

export interface Credentials {
  enterpriseId: number
  keyVersion: number
  secret: string
}

export type AdminApi = Pick<PushPlatformReady, 'adminUrl' | 'adminToken'>

const adminClients = new WeakMap<AdminApi, AdminClient>()

/** The admin client of a platform, one per platform. */
export function adminOf(platform: AdminApi): AdminClient {
  let admin = adminClients.get(platform)
  if (!admin) {
    admin = new AdminClient(platform.adminUrl, platform.adminToken)
    adminClients.set(platform, admin)
  }
  return admin
}

/** Pushes to /push/<label> on the receiver are opened with `credentials`, and counted under `label`. */
export async function registerWithReceiver(
  receiverUrl: string,
  label: string,
  credentials: Credentials,
): Promise<void> {
  const registration: ReceiverRegistration = { label, ...credentials }
  const response = await fetch(`${receiverUrl}/bench/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(registration),
  })
  if (!response.ok) throw new Error(`receiver refused ${label}: ${await response.text()}`)
}

/**
 * An enterprise, registered with the receiver as `label`; with a push URL /push/<label> on the
 * receiver's `pushOrigin` (one endpoint, every event type), or none when `pushOrigin` is null.
 */
export async function benchEnterprise(
  platform: AdminApi,
  receiverUrl: string,
  label: string,
  pushOrigin: string | null = receiverUrl,
): Promise<Credentials> {
  const pushUrl = pushOrigin === null ? undefined : `${pushOrigin}/push/${label}`
  const created = await adminOf(platform).createEnterprise(`Push bench ${label}`, pushUrl)
  await registerWithReceiver(receiverUrl, label, created)
  return created
}

export type EndpointSettings = Pick<NewEndpoint, 'url' | 'eventTypes' | 'maxPerSecond'>

/** Adds an endpoint to the enterprise; its id. */
export async function addEndpoint(
  platform: AdminApi,
  enterpriseId: number,
  settings: EndpointSettings,
): Promise<number> {
  const added = await adminOf(platform).addEndpoint(enterpriseId, settings)
  return added.endpointId
}

const RECORDED_FROM = Date.UTC(2025, 5, 1)

/** Which parts each recording has: the audio (a `recording.audio_ready` push), the transcript (`…transcript_ready`). */
export interface RecordingParts {
  audio: boolean
  transcript: boolean
}
export const AUDIO_ONLY: RecordingParts = { audio: true, transcript: false }
export const TRANSCRIPT_ONLY: RecordingParts = { audio: false, transcript: true }
export const AUDIO_AND_TRANSCRIPT: RecordingParts = { audio: true, transcript: true }

export function recordingLine(label: string, i: number, parts: RecordingParts): string {
  return JSON.stringify({
    deviceUid: `bench-device-${i % 100}`,
    title: `Push bench ${label} ${i}`,
    recordedAt: new Date(RECORDED_FROM + i * 1000).toISOString(),
    ...(parts.audio && {
      denoiseUrl: `https://cdn.example.com/bench/${label}/${i}.wav`,
      recordDuration: 60_000,
    }),
    ...(parts.transcript && {
      transcript: {
        transcriptId: i,
        transcriptText: `Push bench transcript ${i}.`,
        sentences: [{ text: `Push bench transcript ${i}.`, beginTime: 0, endTime: 2000 }],
        durationMs: 2000,
        wordsCount: 4,
      },
    }),
  })
}

/** Recordings `from` … `from + count - 1` of `label` (audio-only unless said), as JSON Lines. */
export function jsonLines(label: string, from: number, count: number, parts = AUDIO_ONLY): string {
  const lines: string[] = []
  for (let i = from; i < from + count; i++) lines.push(recordingLine(label, i, parts))
  return `${lines.join('\n')}\n`
}

export interface ImportTiming {
  /** Epoch milliseconds: request sent, and the `{imported}` line (written after the commit) read. */
  started: number
  acked: number
  count: number
}

/** One JSON Lines import (one transaction); throws when it fails. */
export async function importRecordings(
  platform: AdminApi,
  enterpriseId: number,
  body: string,
): Promise<ImportTiming> {
  const started = Date.now()
  let last: ImportLine | undefined
  for await (const line of adminOf(platform).importRecordings(enterpriseId, body)) last = line
  const acked = Date.now()
  if (last === undefined || !('imported' in last)) {
    throw new Error(`import failed: ${JSON.stringify(last ?? null).slice(0, 300)}`)
  }
  return { started, acked, count: last.imported }
}

export async function progressOf(receiverUrl: string, label: string): Promise<ReceiverProgress> {
  const response = await fetch(`${receiverUrl}/bench/progress?label=${encodeURIComponent(label)}`)
  return (await response.json()) as ReceiverProgress
}

/** What the receiver counts as done: recordings confirmed (distinct audioIds), unless said otherwise. */
export type DoneCount = (progress: ReceiverProgress) => number
const confirmedRecordings: DoneCount = (progress) => progress.confirmed

/**
 * Polls the receiver until `done` reaches `expected()` once `finished()`, or nothing moves for STALL_MS;
 * logs the pace every 5 s.
 */
export async function awaitConfirmations(
  receiverUrl: string,
  label: string,
  expected: () => number,
  finished: () => boolean,
  done = confirmedRecordings,
): Promise<{ progress: ReceiverProgress; stalled: boolean }> {
  let seen = ''
  let lastChange = performance.now()
  let lastLog = performance.now()
  let loggedDone = 0
  for (;;) {
    const progress = await progressOf(receiverUrl, label)
    if (finished() && done(progress) >= expected()) return { progress, stalled: false }
    const now = performance.now()
    const state = `${progress.pushes}/${progress.callbacks}/${progress.callbackRetries}`
    if (state !== seen || !finished()) {
      seen = state
      lastChange = now
    } else if (now - lastChange > STALL_MS) {
      return { progress, stalled: true }
    }
    if (now - lastLog >= 5000) {
      const perSecond = (1000 * (done(progress) - loggedDone)) / (now - lastLog)
      lastLog = now
      loggedDone = done(progress)
      log(
        `  ${label}: ${format(progress.pushes)} pushes, ${format(done(progress))} confirmed (${format(perSecond)}/s over the last 5 s)`,
      )
    }
    await sleep(100)
  }
}
