import { randomUUID } from 'node:crypto'
import { setTimeout as delay } from 'node:timers/promises'
import {
  CHECK_AUDIO_ID_PREFIX,
  CHECK_HEADER,
  type CheckItemId,
  type EnvelopeKey,
  generateSecret,
  type JsonObject,
  loadKey,
  PushEventType,
  ResponseCode,
  seal,
} from '@earshot/protocol'
import type { PlatformContext } from '../context/platform-context.js'
import { createPushSender, type PushSender, type SendOutcome } from '../dispatch/push-sender.js'
import { currentKey } from '../enterprises/enterprise-store.js'
import { ApiError } from '../http/api-error.js'
import { type CheckCallback, checkCallbacks, markAnswered, registerCheck } from './receiver-check-store.js'

/*
 * The receiver check: a scripted series of pushes to a partner's URL, sealed with its enterprise's current
 * key and marked X-Earshot-Check: 1, and a verdict on each item with what came back. Its audioIds begin
 * `check_`; their receipt callbacks are recorded by receiver-check-store.ts, never as receipts.
 */

export type { CheckItemId }

export interface CheckItem {
  id: CheckItemId
  /** A failure item decides the verdict; a warning item is reported only. */
  severity: 'failure' | 'warning'
  passed: boolean
  expected: string
  evidence: string
}

export interface ReceiverCheckReport {
  url: string
  enterpriseId: number
  keyVersion: number
  /** Every failure item passed. */
  passed: boolean
  items: CheckItem[]
}

/** The pushes of the series, each to an audioId of its own. */
const PUSHES = ['valid', 'tampered', 'other-key', 'not-an-envelope', 'replayed', 'unknown-fields', 'deleted']
type PushName = (typeof PUSHES)[number]

interface CheckRun {
  context: PlatformContext
  url: string
  key: EnvelopeKey
  keyVersion: number
  audioIds: Record<PushName, string>
  sender: PushSender
  /** Aborted when the check's caller goes away: its pushes and its wait for callbacks stop. */
  signal: AbortSignal
}

type Outcomes = Record<
  | 'valid'
  | 'again'
  | 'tampered'
  | 'otherKey'
  | 'notEnvelope'
  | 'replayed'
  | 'replayedAgain'
  | 'extra'
  | 'deleted',
  SendOutcome
>

/** Runs the series against `url`; resolves to the report (the partner's failures are items, not errors). */
export async function checkReceiver(
  context: PlatformContext,
  enterpriseId: number,
  url: string,
  callbackWithinMs: number,
  signal: AbortSignal,
): Promise<ReceiverCheckReport> {
  const key = await currentKey(context.db, enterpriseId)
  if (!key) throw new ApiError(ResponseCode.NOT_FOUND, `no enterprise ${enterpriseId}`)
  const { keyVersion, secret } = key
  const runId = context.randomBytes(6).toString('hex')
  const audioIds = Object.fromEntries(
    PUSHES.map((name) => [name, `${CHECK_AUDIO_ID_PREFIX}${runId}_${name}`]),
  )
  await registerCheck(context.db, enterpriseId, Object.values(audioIds))
  const sender = createPushSender({
    timeoutMs: context.config.pushTimeoutSeconds * 1000,
    allowPrivate: context.config.pushAllowPrivate,
    connectionsPerOrigin: 1,
  })
  const run: CheckRun = { context, url, key: loadKey(secret), keyVersion, audioIds, sender, signal }
  try {
    const outcomes = await pushSeries(run)
    const callbacks = await awaitCallbacks(run, outcomes, callbackWithinMs)
    const items = verdicts(run, outcomes, callbacks, callbackWithinMs)
    const passed = items.every((item) => item.passed || item.severity === 'warning')
    return { url, enterpriseId, keyVersion, passed, items }
  } finally {
    await sender.close()
  }
}

async function pushSeries(run: CheckRun): Promise<Outcomes> {
  const valid = recordingEvent(run, 'valid')
  const replayed = sealed(run, recordingEvent(run, 'replayed'))
  const unknownFields = recordingEvent(run, 'unknown-fields')
  const outcomes: Partial<Outcomes> = {}
  outcomes.valid = await push(run, 'valid', sealed(run, valid))
  outcomes.again = await push(run, 'valid', sealed(run, valid))
  outcomes.tampered = await push(
    run,
    'tampered',
    withTamperedTag(sealed(run, recordingEvent(run, 'tampered'))),
  )
  const otherKey = loadKey(generateSecret())
  outcomes.otherKey = await push(run, 'other-key', sealed(run, recordingEvent(run, 'other-key'), otherKey))
  outcomes.notEnvelope = await push(
    run,
    'not-an-envelope',
    JSON.stringify(recordingEvent(run, 'not-an-envelope')),
  )
  outcomes.replayed = await push(run, 'replayed', replayed)
  outcomes.replayedAgain = await push(run, 'replayed', replayed)
  const extra = {
    ...unknownFields,
    futureField: 'a field this receiver does not know',
    data: { ...(unknownFields.data as JsonObject), futureField: 1 },
  }
  outcomes.extra = await push(run, 'unknown-fields', sealed(run, extra))
  outcomes.deleted = await push(run, 'deleted', sealed(run, deletionEvent(run)))
  return outcomes as Outcomes
}

/** One push of the series; an acknowledged one is marked answered for its callback. */
async function push(run: CheckRun, name: PushName, body: string): Promise<SendOutcome> {
  const eventId = (JSON.parse(body) as { eventId: string }).eventId
  run.signal.throwIfAborted()
  const headers = { [CHECK_HEADER]: '1' }
  const outcome = await run.sender.send({ url: run.url, eventId, body, headers, signal: run.signal })
  run.signal.throwIfAborted()
  if (outcome.acked) await markAnswered(run.context.db, run.audioIds[name] as string)
  return outcome
}

function recordingEvent(run: CheckRun, name: PushName): JsonObject {
  const now = new Date(run.context.clock()).toISOString()
  return {
    eventId: randomUUID(),
    eventType: PushEventType.AUDIO_READY,
    audioId: run.audioIds[name] as string,
    occurredAt: now,
    data: {
      deviceUid: 'EARSHOT-CHECK',
      title: 'Earshot receiver check',
      recordedAt: now,
      denoiseUrl: 'https://earshot.invalid/receiver-check.wav',
      recordDuration: 1000,
    },
  }
}

function deletionEvent(run: CheckRun): JsonObject {
  const occurredAt = new Date(run.context.clock()).toISOString()
  const audioId = run.audioIds.deleted as string
  return { eventId: randomUUID(), eventType: PushEventType.DELETED, audioId, occurredAt, data: {} }
}

function sealed(run: CheckRun, event: JsonObject, key = run.key): string {
  const options = { randomBytes: run.context.randomBytes }
  return JSON.stringify(seal(key, run.keyVersion, event.eventId as string, event, options))
}

function withTamperedTag(body: string): string {
  const envelope = JSON.parse(body) as { tag: string }
  const tag = Buffer.from(envelope.tag, 'base64')
  tag[0] = (tag[0] as number) ^ 0x01
  return JSON.stringify({ ...envelope, tag: tag.toString('base64') })
}

/** The data pushes acknowledged, whose callbacks are awaited. */
function acknowledgedData(run: CheckRun, outcomes: Outcomes): string[] {
  const data: [PushName, SendOutcome][] = [
    ['valid', outcomes.valid],
    ['replayed', outcomes.replayed],
    ['unknown-fields', outcomes.extra],
  ]
  return data.filter(([, outcome]) => outcome.acked).map(([name]) => run.audioIds[name] as string)
}

/** Waits until every acknowledged data push has its callback, or the time for them has passed. */
async function awaitCallbacks(
  run: CheckRun,
  outcomes: Outcomes,
  withinMs: number,
): Promise<Map<string, CheckCallback>> {
  const awaited = acknowledgedData(run, outcomes)
  const all = Object.values(run.audioIds)
  const deadline = performance.now() + withinMs
  for (;;) {
    const callbacks = await checkCallbacks(run.context.db, all)
    const done = awaited.every((audioId) => callbacks.get(audioId)?.calledBack)
    if (done || performance.now() >= deadline) return callbacks
    await delay(100, undefined, { signal: run.signal })
  }
}

function verdicts(
  run: CheckRun,
  outcomes: Outcomes,
  callbacks: Map<string, CheckCallback>,
  withinMs: number,
): CheckItem[] {
  const calledBack = (name: PushName) => callbacks.get(run.audioIds[name] as string)?.calledBack === true
  const refused = (id: CheckItemId, name: PushName, outcome: SendOutcome, expected: string): CheckItem => ({
    id,
    severity: 'failure',
    passed: !outcome.acked && !calledBack(name),
    expected,
    evidence: `${answered(outcome)}${calledBack(name) ? '; and it called back for that audioId' : ''}`,
  })
  const acked = (id: CheckItemId, outcome: SendOutcome, expected: string): CheckItem => ({
    id,
    severity: 'failure',
    passed: outcome.acked,
    expected,
    evidence: answered(outcome),
  })
  return [
    acked(
      'valid-push',
      outcomes.valid,
      'a valid push is acknowledged: HTTP 2xx and {"code":2000} within the push timeout',
    ),
    acked(
      'same-event-again',
      outcomes.again,
      'the same event again (same eventId, a fresh nonce) is acknowledged again',
    ),
    refused(
      'tampered-tag',
      'tampered',
      outcomes.tampered,
      'an envelope whose tag was altered is not acknowledged',
    ),
    refused(
      'other-key',
      'other-key',
      outcomes.otherKey,
      'an envelope sealed with another key is not acknowledged',
    ),
    refused(
      'not-an-envelope',
      'not-an-envelope',
      outcomes.notEnvelope,
      'a body that is not an envelope is not acknowledged',
    ),
    {
      id: 'replayed-envelope',
      severity: 'warning',
      passed: outcomes.replayed.acked && !outcomes.replayedAgain.acked,
      expected: 'the exact same envelope sent again is not acknowledged the second time (its nonce was seen)',
      evidence: `first: ${answered(outcomes.replayed)}; again: ${answered(outcomes.replayedAgain)}`,
    },
    acked(
      'unknown-fields',
      outcomes.extra,
      'an event with fields the receiver does not know is acknowledged',
    ),
    acked('deletion', outcomes.deleted, 'a recording.deleted push is acknowledged'),
    callbackVerdict(acknowledgedData(run, outcomes), callbacks, withinMs),
  ]
}

function callbackVerdict(
  awaited: string[],
  callbacks: Map<string, CheckCallback>,
  withinMs: number,
): CheckItem {
  const seconds = withinMs / 1000
  const each = awaited.map((audioId) => {
    const callback = callbacks.get(audioId)
    if (!callback?.calledBack) return { ok: false, text: `${audioId}: no callback within ${seconds} s` }
    if (callback.beforeAnswer) return { ok: false, text: `${audioId}: called back before answering the push` }
    return {
      ok: true,
      text: `${audioId}: called back ${Math.round(callback.afterAnswerMs ?? 0)} ms after the answer`,
    }
  })
  return {
    id: 'callbacks',
    severity: 'failure',
    passed: each.length > 0 && each.every((callback) => callback.ok),
    expected: `a receipt callback follows each acknowledged data push, after its answer, within ${seconds} s`,
    evidence:
      each.length === 0
        ? 'no data push was acknowledged, so none could be called back'
        : each.map((c) => c.text).join('; '),
  }
}

/** What came back from a push, in a few words. */
function answered(outcome: SendOutcome): string {
  const ms = `in ${Math.round(outcome.durationMs)} ms`
  if (outcome.httpStatus === undefined) return `${outcome.error ?? outcome.result} (${ms})`
  const code = outcome.responseCode === undefined ? 'no code' : `code ${outcome.responseCode}`
  return `HTTP ${outcome.httpStatus}, ${code} ${ms}${outcome.acked ? ' (acknowledged)' : ''}`
}
