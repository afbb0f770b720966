/**
 * The invariants the two-instance stress test (issue 41) checks once every push URL is healthy and the
 * queue has drained: pure functions of one snapshot of the database and of what the receivers got, each
 * returning the deliveries that break it. Read as the spec of the push queue's order and removal rules.
 */

export interface DeliveryRow {
  deliveryId: number
  endpointId: number | null
  audioId: string
  eventId: string
  eventType: string
  state: string
  /** wire_until is in the future: an attempt cancelled in flight may still be on the wire. */
  onTheWire: boolean
}

export interface EndpointRow {
  endpointId: number
  url: string
  enabled: boolean
  removed: boolean
  /** Its push URL is disabled (push_url_health.disabled_at). */
  urlDisabled: boolean
}

export interface AttemptRow {
  deliveryId: number
  startedAtMs: number
  outcome: string
  /** Recorded under a claim no longer current (the delivery was cancelled or taken back meanwhile). */
  stale: boolean
}

/** One row of the harness's transition log (a trigger on deliveries): from is null for the insert. */
export interface Transition {
  deliveryId: number
  from: string | null
  to: string
  atMs: number
}

/** A push as a receiver saw it, in the order it saw them. */
export interface Arrival {
  endpointId: number
  eventId: string
  audioId: string
  eventType: string
  atMs: number
  status: number
}

/** An endpoint's removal: its admin call had returned (so committed) by this time. */
export interface Removal {
  endpointId: number
  committedByMs: number
}

export interface Snapshot {
  deliveries: DeliveryRow[]
  endpoints: EndpointRow[]
  attempts: AttemptRow[]
  transitions: Transition[]
}

export interface Violation {
  invariant: Invariant
  deliveryId: number
  detail: string
}

export type Invariant =
  | 'queued-with-nothing-ahead'
  | 'held-but-not-paused'
  | 'open-for-removed-endpoint'
  | 'attempt-after-removal'
  | 'out-of-creation-order'
  | 'confirmed-but-never-acked'
  | 'not-final'

/** The states in which a delivery holds back the later events of its recording to its endpoint. */
const OPEN_AHEAD = new Set(['pending', 'held', 'in_flight'])
const FINAL = new Set(['confirmed', 'cancelled'])
/** A move back to pending from these is a re-push (confirm window) or a replay: order is not promised. */
const REPUSHED_FROM = new Set(['acked', 'failed', 'unconfirmed'])

const lineKey = (d: DeliveryRow) => `${d.endpointId} ${d.audioId}`
const describe = (d: DeliveryRow) =>
  `${d.eventType} of ${d.audioId} to endpoint ${d.endpointId} (delivery ${d.deliveryId}, ${d.state})`

function byLine(deliveries: readonly DeliveryRow[]): Map<string, DeliveryRow[]> {
  const lines = new Map<string, DeliveryRow[]>()
  for (const d of deliveries) {
    if (d.endpointId === null) continue
    const line = lines.get(lineKey(d)) ?? []
    line.push(d)
    lines.set(lineKey(d), line)
  }
  for (const line of lines.values()) line.sort((a, b) => a.deliveryId - b.deliveryId)
  return lines
}

/** No delivery is queued with nothing open before it to its endpoint: it would never be pushed. */
export function queuedWithNothingAhead(snapshot: Snapshot): Violation[] {
  const violations: Violation[] = []
  for (const line of byLine(snapshot.deliveries).values()) {
    line.forEach((d, i) => {
      if (d.state !== 'queued') return
      const before = line.slice(0, i)
      if (before.some((b) => OPEN_AHEAD.has(b.state) || b.onTheWire)) return
      const queuedBefore = before.filter((b) => b.state === 'queued').map((b) => b.deliveryId)
      const ahead = before.map((b) => `${b.deliveryId}:${b.state}`).join(', ') || 'none'
      violations.push({
        invariant: 'queued-with-nothing-ahead',
        deliveryId: d.deliveryId,
        detail: `${describe(d)}; earlier deliveries of the line: ${ahead}${
          queuedBefore.length > 0 ? ` (queued behind queued ${queuedBefore.join(', ')})` : ''
        }`,
      })
    })
  }
  return violations
}

/** No delivery is held whose endpoint is enabled and whose push URL is not disabled. */
export function heldButNotPaused(snapshot: Snapshot): Violation[] {
  const endpoints = new Map(snapshot.endpoints.map((e) => [e.endpointId, e]))
  return snapshot.deliveries.flatMap((d) => {
    const endpoint = d.endpointId === null ? undefined : endpoints.get(d.endpointId)
    if (d.state !== 'held' || !endpoint || endpoint.removed) return []
    if (!endpoint.enabled || endpoint.urlDisabled) return []
    return [{ invariant: 'held-but-not-paused' as const, deliveryId: d.deliveryId, detail: describe(d) }]
  })
}

/** A removed endpoint's deliveries are all confirmed or cancelled (its removal cancels the rest). */
export function openForRemovedEndpoint(snapshot: Snapshot): Violation[] {
  const removed = new Set(snapshot.endpoints.filter((e) => e.removed).map((e) => e.endpointId))
  return snapshot.deliveries
    .filter((d) => d.endpointId !== null && removed.has(d.endpointId) && !FINAL.has(d.state))
    .map((d) => ({
      invariant: 'open-for-removed-endpoint' as const,
      deliveryId: d.deliveryId,
      detail: describe(d),
    }))
}

/**
 * No attempt to a removed endpoint began after its removal had committed (the first such, per delivery),
 * unless it was claimed before: its delivery was cancelled in flight (cancelled is final, so no claim came
 * after), and a claim taken before the removal may start its push after it ("an attempt on the wire ends as
 * it ends") — late on a loaded machine.
 */
export function attemptsAfterRemoval(snapshot: Snapshot, removals: readonly Removal[]): Violation[] {
  const removedBy = new Map(removals.map((r) => [r.endpointId, r.committedByMs]))
  const deliveries = new Map(snapshot.deliveries.map((d) => [d.deliveryId, d]))
  const cancelledInFlight = new Set(
    snapshot.transitions
      .filter((t) => t.from === 'in_flight' && t.to === 'cancelled')
      .map((t) => t.deliveryId),
  )
  const first = new Map<number, AttemptRow>()
  for (const a of snapshot.attempts) {
    const d = deliveries.get(a.deliveryId)
    const committedBy = d?.endpointId == null ? undefined : removedBy.get(d.endpointId)
    if (committedBy === undefined || a.startedAtMs <= committedBy) continue
    if (a.stale && cancelledInFlight.has(a.deliveryId)) continue
    if ((first.get(a.deliveryId)?.startedAtMs ?? Infinity) > a.startedAtMs) first.set(a.deliveryId, a)
  }
  return [...first.values()].map((a) => {
    const d = deliveries.get(a.deliveryId) as DeliveryRow
    const committedBy = removedBy.get(d.endpointId as number) as number
    const later = snapshot.attempts.filter(
      (x) => x.deliveryId === a.deliveryId && x.startedAtMs > committedBy,
    )
    return {
      invariant: 'attempt-after-removal' as const,
      deliveryId: d.deliveryId,
      detail: `${describe(d)}: ${later.length} attempt(s), the first (${a.outcome}${a.stale ? ', stale' : ''}) ${Math.round(a.startedAtMs - committedBy)} ms after the removal returned`,
    }
  })
}

/**
 * Each endpoint got each recording's events in the order they were created: no push of a delivery arrives
 * after a push of a later delivery of its recording to that endpoint, unless it was moved back to pending
 * from acked (a re-push after the confirm window), failed (given up, then replayed or its URL enabled) or
 * unconfirmed (replayed) before it arrived.
 */
export function outOfCreationOrder(snapshot: Snapshot, arrivals: readonly Arrival[]): Violation[] {
  const byEvent = new Map(snapshot.deliveries.map((d) => [d.eventId, d]))
  const repushedAt = new Map<number, number[]>()
  for (const t of snapshot.transitions) {
    if (t.to !== 'pending' || t.from === null || !REPUSHED_FROM.has(t.from)) continue
    repushedAt.set(t.deliveryId, [...(repushedAt.get(t.deliveryId) ?? []), t.atMs])
  }
  const latest = new Map<string, { d: DeliveryRow; atMs: number }>()
  const violations: Violation[] = []
  for (const arrival of arrivals) {
    const d = byEvent.get(arrival.eventId)
    if (!d) continue
    const seen = latest.get(lineKey(d))
    if (seen && d.deliveryId < seen.d.deliveryId) {
      const exempt = (repushedAt.get(d.deliveryId) ?? []).some((at) => at < arrival.atMs)
      if (!exempt) {
        violations.push({
          invariant: 'out-of-creation-order',
          deliveryId: d.deliveryId,
          detail: `${describe(d)} arrived ${Math.round(arrival.atMs - seen.atMs)} ms after ${seen.d.eventType} (delivery ${seen.d.deliveryId}, created later), never re-pushed or replayed before`,
        })
      }
    }
    if (!seen || d.deliveryId > seen.d.deliveryId) latest.set(lineKey(d), { d, atMs: arrival.atMs })
  }
  return violations
}

/** Nothing is lost: a confirmed delivery's endpoint answered 2000 to a push of it at least once. */
export function confirmedButNeverAcked(snapshot: Snapshot, arrivals: readonly Arrival[]): Violation[] {
  const acked = new Set(arrivals.filter((a) => a.status === 200).map((a) => `${a.endpointId} ${a.eventId}`))
  return snapshot.deliveries
    .filter((d) => d.state === 'confirmed' && !acked.has(`${d.endpointId} ${d.eventId}`))
    .map((d) => ({
      invariant: 'confirmed-but-never-acked' as const,
      deliveryId: d.deliveryId,
      detail: `${describe(d)}: its receiver never answered 2000 to it`,
    }))
}

/** Every delivery ends confirmed or cancelled. */
export function notFinal(snapshot: Snapshot): Violation[] {
  return snapshot.deliveries
    .filter((d) => !FINAL.has(d.state))
    .map((d) => ({ invariant: 'not-final' as const, deliveryId: d.deliveryId, detail: describe(d) }))
}

/** Every invariant's violations. Arrivals must be in the order each receiver saw them. */
export function checkInvariants(
  snapshot: Snapshot,
  arrivals: readonly Arrival[],
  removals: readonly Removal[],
): Violation[] {
  return [
    ...queuedWithNothingAhead(snapshot),
    ...heldButNotPaused(snapshot),
    ...openForRemovedEndpoint(snapshot),
    ...attemptsAfterRemoval(snapshot, removals),
    ...outOfCreationOrder(snapshot, arrivals),
    ...confirmedButNeverAcked(snapshot, arrivals),
    ...notFinal(snapshot),
  ]
}
