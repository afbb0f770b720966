/**
 * The world of the two-instance stress test (issue 41): two platform instances on one PostgreSQL database,
 * partners with push endpoints each served by a real loopback receiver, and what the run did and saw
 * (receivers' arrivals, endpoint removals, the operations made). Operations go through the admin client and
 * the partner API of either instance.
 */
import { setTimeout as delay } from 'node:timers/promises'
import { PushEventType } from '@earshot/protocol'
import { partnerFor, type TestPartner } from '@earshot/test-kit/calls'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import { AdminClient } from '../../admin-client/admin-client.js'
import type { RunningPlatform } from '../../platform.js'
import type { EventType } from '../../recordings/recording-events.js'
import type { Arrival, Removal } from './two-instance-stress-invariants.js'

/** A small seeded generator (mulberry32). */
export function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

export type Random = () => number
export const pick = <T>(random: Random, items: readonly T[]): T | undefined =>
  items[Math.floor(random() * items.length)]

export interface Instance {
  name: 'A' | 'B'
  platform: RunningPlatform & { adminToken: string }
  admin: AdminClient
}

/** An endpoint and its receiver; `outage` makes the receiver answer every push 503 or 410. */
export interface StressEndpoint {
  enterpriseId: number
  endpointId: number
  url: string
  receiver: TestReceiver
  enabled: boolean
  removed: boolean
  outage: 'down' | 'gone' | undefined
}

export interface StressPartner {
  enterpriseId: number
  credentials: { enterpriseId: number; keyVersion: number; secret: string }
  /** Recordings stored and not deleted, and those deleted. */
  live: string[]
  deleted: string[]
  nextRecording: number
  token: string | undefined
}

/** One operation the run made, for the interleaving shown next to a violation. */
export interface OpRecord {
  /** Milliseconds since the run began: when it was called, and when it returned. */
  startMs: number
  endMs: number
  worker: number
  instance: string
  op: string
  target: string
  outcome: string
}

/** Share of pushes a receiver fails with 500 while the run lasts. */
const FAIL_SHARE = 0.2
/** Share of pushes held up a while before the receiver takes them in (well within the push timeout). */
const SLOW_SHARE = 0.1
/** After the confirm window: the delivery is pushed again before the receipt comes. */
const LATE_RECEIPT_MS = 1_500

export class World {
  readonly endpoints: StressEndpoint[] = []
  readonly partners: StressPartner[] = []
  readonly arrivals: Arrival[] = []
  readonly removals: Removal[] = []
  readonly ops: OpRecord[] = []
  readonly callbackCodes = new Map<number, number>()
  /** Once true, receivers ack every push and call back at once, as a healthy partner does. */
  healthy = false
  readonly #background = new Set<Promise<unknown>>()
  readonly #random: Random

  constructor(
    readonly instances: readonly Instance[],
    seed: number,
    readonly startedAtMs = Date.now(),
  ) {
    this.#random = seeded(seed ^ 0x5eed)
  }

  instance(random: Random): Instance {
    return random() < 0.5 ? (this.instances[0] as Instance) : (this.instances[1] as Instance)
  }

  /** Runs a promise in the background; settled() waits for every one. */
  background(work: Promise<unknown>): void {
    const tracked = work.catch(() => {}).finally(() => this.#background.delete(tracked))
    this.#background.add(tracked)
  }

  async settled(): Promise<void> {
    while (this.#background.size > 0) await Promise.all([...this.#background])
  }

  async addPartner(name: string): Promise<StressPartner> {
    const credentials = await (this.instances[0] as Instance).admin.createEnterprise(name)
    const partner: StressPartner = {
      enterpriseId: credentials.enterpriseId,
      credentials,
      live: [],
      deleted: [],
      nextRecording: 0,
      token: undefined,
    }
    this.partners.push(partner)
    return partner
  }

  /** Adds an endpoint served by a new receiver, through the instance given. */
  async addEndpoint(instance: Instance, partner: StressPartner, eventTypes?: EventType[]) {
    const slot: { endpoint?: StressEndpoint } = {}
    const receiver = await startTestReceiver(partner.credentials.secret, {
      answer: (push) => this.#answer(slot.endpoint, push.event),
      afterAnswer: (push, answer) => {
        const acked = (answer.body as { code?: number }).code === 2000
        if (acked && push.event.eventType !== PushEventType.DELETED)
          this.#receipt(partner, push.event.audioId)
      },
    })
    const added = await instance.admin.addEndpoint(partner.enterpriseId, {
      url: receiver.url,
      ...(eventTypes && { eventTypes }),
    })
    const endpoint: StressEndpoint = {
      enterpriseId: partner.enterpriseId,
      endpointId: added.endpointId,
      url: receiver.url,
      receiver,
      enabled: true,
      removed: false,
      outage: undefined,
    }
    slot.endpoint = endpoint
    this.endpoints.push(endpoint)
    return endpoint
  }

  async #answer(
    endpoint: StressEndpoint | undefined,
    event: { eventId: string; audioId: string; eventType: string },
  ) {
    // A push slow to reach the partner's store: what the platform sends while an earlier push of the same
    // recording is still on the wire (which it must not) then overtakes it here.
    if (!this.healthy && this.#random() < SLOW_SHARE) await delay(20 + Math.floor(this.#random() * 230))
    const fail = !this.healthy && this.#random() < FAIL_SHARE
    const status = endpoint?.outage === 'gone' ? 410 : endpoint?.outage === 'down' ? 503 : fail ? 500 : 200
    this.arrivals.push({
      endpointId: endpoint?.endpointId ?? -1,
      eventId: event.eventId,
      audioId: event.audioId,
      eventType: event.eventType,
      atMs: Date.now(),
      status,
    })
    if (status === 200 && this.#random() < 0.2) await delay(Math.floor(this.#random() * 40))
    return { status, body: { code: status === 200 ? 2000 : status * 10 } }
  }

  /** A partner's receipt after its 2000: at once mostly, sometimes after the confirm window, sometimes never. */
  #receipt(partner: StressPartner, audioId: string): void {
    const roll = this.healthy ? 0 : this.#random()
    if (roll < 0.6) this.background(this.callBack(this.instance(this.#random), partner, audioId))
    else if (roll < 0.8)
      this.background(
        delay(LATE_RECEIPT_MS).then(() => this.callBack(this.instance(this.#random), partner, audioId)),
      )
  }

  /** The sealed receipt callback through an instance's partner API; resolves with its code. */
  async callBack(instance: Instance, partner: StressPartner, audioId: string): Promise<number> {
    const client: TestPartner = partnerFor(instance.platform, partner.credentials)
    for (let attempt = 0; ; attempt++) {
      partner.token ??= await client.token()
      const reply = await client.call('/openapi/v1/callback', { audioId }, partner.token)
      const code = reply.body.code
      if ((code === 4010 || code === 4011) && attempt < 2) {
        partner.token = undefined
        continue
      }
      this.callbackCodes.set(code, (this.callbackCodes.get(code) ?? 0) + 1)
      return code
    }
  }

  /** Removes an endpoint and notes when the removal had surely committed (its call returned). */
  async removeEndpoint(instance: Instance, endpoint: StressEndpoint): Promise<void> {
    endpoint.removed = true
    await instance.admin
      .removeEndpoint(endpoint.enterpriseId, endpoint.endpointId)
      .catch((error: unknown) => {
        endpoint.removed = false
        throw error
      })
    this.removals.push({ endpointId: endpoint.endpointId, committedByMs: Date.now() })
  }

  record(op: Omit<OpRecord, 'endMs'>): void {
    this.ops.push({ ...op, endMs: Date.now() - this.startedAtMs })
  }

  async close(): Promise<void> {
    await this.settled()
    for (const endpoint of this.endpoints) await endpoint.receiver.close()
  }
}

/** A new recording's JSON line: with its transcript (two events) half the time. */
export function recordingLine(audioId: string, n: number, withTranscript: boolean): string {
  return JSON.stringify({
    audioId,
    deviceUid: `DEV-${n % 7}`,
    title: `recording ${n}`,
    recordedAt: new Date(Date.UTC(2026, 1, 1) + n * 1000).toISOString(),
    denoiseUrl: `https://media.example/stress/${n}.mp3`,
    recordDuration: 1000 + n,
    ...(withTranscript && { transcript: transcriptOf(n) }),
  })
}

export function transcriptOf(n: number) {
  return {
    transcriptId: n + 1,
    transcriptText: `words of ${n}`,
    sentences: [{ text: `words of ${n}`, beginTime: 0, endTime: 700 }],
    durationMs: 700,
    wordsCount: 3,
  }
}

export function adminOf(platform: RunningPlatform & { adminToken: string }): AdminClient {
  return new AdminClient(platform.adminUrl, platform.adminToken)
}
