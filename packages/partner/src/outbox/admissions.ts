import { batcher } from '@earshot/support/batcher'
import type { Database } from '../storage/database.js'
import { admitAndRecord, type EnvelopeSeen, nonceKey, rearm } from './outbox-store.js'

/** What the outbox knows of a push before its recording is handed over. */
export type Admission = 'new' | 'duplicate' | 'replayed'

export interface ReceivedEvent {
  eventId: string
  eventType: string
  audioId: string
  /** Its callback confirms the erasure of the deleted recording (`erased: true`). */
  erased?: boolean | undefined
}

/** On PostgreSQL, batches of pushes run on this many pool connections at once. */
const POSTGRES_PARALLEL_BATCHES = 4

type Work = { kind: 'admit'; item: EnvelopeSeen } | { kind: 'record'; event: ReceivedEvent }

export interface AdmissionSettings {
  clock: () => number
  answerGraceMs: number
  replayWindowMs: number
  /** How long a new or repeated event's callback waits for its answer to go out, and the attempt it starts. */
  holdSeconds: number
  claimant: string
}

/** A callback this outbox recorded and holds until its answer went out. */
export interface HeldCallback {
  audioId: string
  eventType: string
  erased: boolean
  at: number
}

/**
 * The pushes' envelopes admitted (nonce taken, event known or new) and their events recorded with a
 * held callback: the calls made together share one statement (outbox-store.ts). Keeps the callbacks
 * recorded here until wake(eventId) takes them, or their answer's grace ends.
 */
export class Admissions {
  /** eventId → the callback held for it, oldest first. */
  readonly #held = new Map<string, HeldCallback>()
  readonly #tick: (work: Work) => Promise<Admission | boolean>

  constructor(
    private readonly db: Database,
    private readonly settings: AdmissionSettings,
  ) {
    this.#tick = batcher((work: Work[]) => this.#run(work), {
      parallel: db.kind === 'postgres' ? POSTGRES_PARALLEL_BATCHES : 1,
    })
  }

  admit(item: EnvelopeSeen): Promise<Admission> {
    return this.#tick({ kind: 'admit', item }) as Promise<Admission>
  }

  recordReceived(event: ReceivedEvent): Promise<boolean> {
    return this.#tick({ kind: 'record', event }) as Promise<boolean>
  }

  /** The callback held for eventId, no longer held (its answer went out). */
  take(eventId: string): HeldCallback | undefined {
    const held = this.#held.get(eventId)
    this.#held.delete(eventId)
    return held
  }

  async #run(work: Work[]): Promise<(Admission | boolean)[]> {
    const now = this.settings.clock()
    const results: (Admission | boolean)[] = new Array(work.length)
    const { admits, records, eventIds } = dedupe(work, results)
    const { taken, known, created } = await admitAndRecord(
      this.db,
      admits.map((a) => a.item),
      records.map((r) => r.event),
      {
        now: new Date(now),
        nonceExpiresAt: new Date(now + this.settings.replayWindowMs),
        holdSeconds: this.settings.holdSeconds,
        claimant: this.settings.claimant,
      },
    )
    this.#forgetUnanswered(now)
    for (const { event, index } of records) {
      const isNew = created.has(event.eventId)
      results[index] = isNew
      if (isNew) {
        const { audioId, eventType } = event
        this.#held.set(event.eventId, { audioId, eventType, erased: event.erased === true, at: now })
      }
    }
    const repeated: string[] = []
    for (const { item, index } of admits) {
      if (!taken.has(nonceKey(item.keyVersion, item.nonce))) results[index] = 'replayed'
      // An event recorded by this very statement is not in its snapshot of the table: ask eventIds too.
      else if (known.has(item.eventId) || eventIds.has(item.eventId)) {
        results[index] = 'duplicate'
        // A callback held here goes out after the answer anyway.
        if (!this.#held.has(item.eventId)) repeated.push(item.eventId)
      } else results[index] = 'new'
    }
    if (repeated.length > 0) await rearm(this.db, repeated, this.settings.holdSeconds)
    return results
  }

  /** Never woken within the grace (the answer did not go out): the hold ends and a claim sends it. */
  #forgetUnanswered(now: number): void {
    for (const [eventId, { at }] of this.#held) {
      if (at > now - this.settings.answerGraceMs) break
      this.#held.delete(eventId)
    }
  }
}

/**
 * The batch's work for the statement, each nonce and event once: the same nonce twice in one batch is a
 * replay of the earlier, the same event recorded twice is not new the second time (answered here).
 */
function dedupe(work: Work[], results: (Admission | boolean)[]) {
  const admits: { item: EnvelopeSeen; index: number }[] = []
  const records: { event: ReceivedEvent; index: number }[] = []
  const nonces = new Set<string>()
  const eventIds = new Set<string>()
  work.forEach((entry, index) => {
    if (entry.kind === 'admit') {
      const key = nonceKey(entry.item.keyVersion, entry.item.nonce)
      if (nonces.has(key)) results[index] = 'replayed'
      else {
        nonces.add(key)
        admits.push({ item: entry.item, index })
      }
    } else if (eventIds.has(entry.event.eventId)) results[index] = false
    else {
      eventIds.add(entry.event.eventId)
      records.push({ event: entry.event, index })
    }
  })
  return { admits, records, eventIds }
}
