import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { keyed, type ScratchDatabase, scratchPostgresDatabase, testConfig } from '@earshot/test-kit/backends'
import { LogCapture } from '@earshot/test-kit/log-capture'
import type { PlatformConfig } from '../config/config.js'
import { startPlatform } from '../platform.js'
import type { Queryable } from '../storage/database.js'
import {
  type Arrival,
  checkInvariants,
  heldButNotPaused,
  type Snapshot,
  type Violation,
} from './test/two-instance-stress-invariants.js'
import { drawOp, enableUrl } from './test/two-instance-stress-ops.js'
import { adminOf, type Instance, pick, type Random, seeded, World } from './test/two-instance-stress-world.js'

/**
 * Issue 41: two platform instances on one PostgreSQL database, for EARSHOT_STRESS_SECONDS (15 by default),
 * interleave imports, updates, deletions, receipts, re-pushes, replays, endpoint changes and push URL
 * outages at random (EARSHOT_STRESS_SEED replays a run's choices); then, every URL healthy and the queue
 * drained, the invariants of two-instance-stress.test.invariants.ts must hold.
 */

const SECONDS = Number(process.env.EARSHOT_STRESS_SECONDS ?? 15)
const SEED = /^\d+$/.test(process.env.EARSHOT_STRESS_SEED ?? '')
  ? Number(process.env.EARSHOT_STRESS_SEED) >>> 0
  : randomInt(2 ** 31)
const WORKERS = 6
const DRAIN_TIMEOUT_MS = 60_000
const HELD_WAIT_MS = 10_000

const settings: Partial<PlatformConfig> = {
  // Five attempts: a receiver failing a fifth of pushes seldom exhausts them, an outage does.
  pushRetryScheduleSeconds: [0.05, 0.1, 0.2, 0.3],
  // Short, so that receipts coming late or never make re-pushes and unconfirmed deliveries.
  pushConfirmWindowSeconds: 1,
  pushTimeoutSeconds: 1,
  pushDisableAfterSeconds: 1.5,
  rateLimitPerMinute: 0,
  // What the platform logged as an error (a statement that failed, a deadlock) is reported with the run; a
  // deadlock, a failed serialization or a 5xx (its request's line is a warning) fails it.
  logLevel: 'warn',
}

/** Every state change of a delivery, with the time it was made: which deliveries were re-pushed or replayed. */
const TRANSITION_LOG = [
  `CREATE TABLE stress_transitions (id bigserial PRIMARY KEY, delivery_id bigint NOT NULL, from_state text,
                                   to_state text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  `CREATE FUNCTION stress_log_transition() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     INSERT INTO stress_transitions (delivery_id, from_state, to_state)
     VALUES (NEW.delivery_id, CASE WHEN TG_OP = 'UPDATE' THEN OLD.state END, NEW.state);
     RETURN NULL;
   END $$`,
  'CREATE TRIGGER stress_log_insert AFTER INSERT ON deliveries FOR EACH ROW EXECUTE FUNCTION stress_log_transition()',
  `CREATE TRIGGER stress_log_update AFTER UPDATE OF state ON deliveries FOR EACH ROW
     WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION stress_log_transition()`,
]

const DELIVERIES_JSON = `json_build_object('deliveryId', delivery_id, 'endpointId', endpoint_id, 'audioId', audio_id,
  'eventId', event_id, 'eventType', event_type, 'state', state, 'onTheWire', coalesce(wire_until > now(), false))`
const ENDPOINTS_JSON = `SELECT coalesce(json_agg(json_build_object('endpointId', ep.endpoint_id, 'url', ep.url,
  'enabled', ep.enabled, 'removed', ep.removed_at IS NOT NULL, 'urlDisabled', coalesce(h.disabled_at IS NOT NULL, false))), '[]')
  FROM endpoints ep LEFT JOIN push_url_health h ON h.url = ep.url`

/** The held deliveries and the endpoints, in one snapshot. */
const HELD_SNAPSHOT = `SELECT
  (SELECT coalesce(json_agg(${DELIVERIES_JSON} ORDER BY delivery_id), '[]') FROM deliveries WHERE state = 'held') AS deliveries,
  (${ENDPOINTS_JSON}) AS endpoints`

/** One statement, so one snapshot of every table the invariants read. */
const SNAPSHOT = `SELECT
  (SELECT coalesce(json_agg(${DELIVERIES_JSON} ORDER BY delivery_id), '[]') FROM deliveries) AS deliveries,
  (${ENDPOINTS_JSON}) AS endpoints,
  (SELECT coalesce(json_agg(json_build_object('deliveryId', delivery_id,
          'startedAtMs', extract(epoch FROM started_at) * 1000, 'outcome', outcome, 'stale', stale)), '[]') FROM delivery_attempts) AS attempts,
  (SELECT coalesce(json_agg(json_build_object('deliveryId', delivery_id, 'from', from_state, 'to', to_state,
          'atMs', extract(epoch FROM at) * 1000) ORDER BY id), '[]') FROM stress_transitions) AS transitions`

/** A JSON array from the database, its ids and times as numbers (bigints come as text). */
function parsed<T>(value: unknown): T[] {
  const rows = (typeof value === 'string' ? JSON.parse(value) : value) as object[]
  return rows.map((r) =>
    Object.fromEntries(
      Object.entries(r).map(([k, v]) => [
        k,
        /^(deliveryId|endpointId)$|Ms$/.test(k) && v !== null ? Number(v) : v,
      ]),
    ),
  ) as T[]
}

async function snapshotOf(db: Queryable): Promise<Snapshot> {
  const [row] = await db.query<Record<keyof Snapshot, unknown>>(SNAPSHOT)
  return {
    deliveries: parsed(row?.deliveries),
    endpoints: parsed(row?.endpoints),
    attempts: parsed(row?.attempts),
    transitions: parsed(row?.transitions),
  }
}

/** One worker: draws operations and instances from its own generator until the run's end. */
async function worker(world: World, n: number, random: Random, endsAt: number, errors: Map<string, number>) {
  while (Date.now() < endsAt) {
    const op = drawOp(random)
    const instance = world.instance(random)
    const partner = pick(random, world.partners)
    if (!partner) return
    let target = ''
    let outcome = 'ok'
    const startMs = Date.now() - world.startedAtMs
    try {
      target = await op.run({ world, random, instance, partner })
    } catch (error) {
      outcome = (error as Error).message.slice(0, 120)
      const key = `${op.name}: ${outcome.replace(/[0-9a-f-]{8,}|e\d+-r\d+|\d+/g, '…')}`
      errors.set(key, (errors.get(key) ?? 0) + 1)
    }
    world.record({ startMs, worker: n, instance: instance.name, op: op.name, target, outcome })
    await delay(5 + Math.floor(random() * 30))
  }
}

/**
 * Every URL healthy: receivers ack all and call back at once, disabled endpoints and URLs enabled (those the
 * database says are disabled: an operation refused midway leaves the harness unsure, and enabling one
 * enabled already would resume what it holds by mistake, hiding it).
 */
async function heal(world: World): Promise<void> {
  world.healthy = true
  const [first] = world.instances as [Instance]
  for (const endpoint of world.endpoints) endpoint.outage = undefined
  const disabled = await first.platform.context.db.query<{ endpoint_id: number; enterprise_id: number }>(
    'SELECT endpoint_id::int, enterprise_id::int FROM endpoints WHERE NOT enabled AND removed_at IS NULL',
  )
  for (const { endpoint_id, enterprise_id } of disabled) {
    await first.admin.updateEndpoint(enterprise_id, endpoint_id, { enabled: true })
  }
  for (const url of await first.admin.listPushUrls()) {
    const endpoint = world.endpoints.find((e) => e.url === url.url)
    if (url.state === 'disabled' && endpoint) await enableUrl(first, endpoint)
  }
}

/**
 * Once the operations are over, before anything is enabled for the drain (which would resume them): the
 * deliveries held on an endpoint that is enabled and whose URL is not disabled. Waits a while for there to
 * be none (a repair may be on its way).
 */
async function heldOnUnpaused(db: Queryable): Promise<Violation[]> {
  const deadline = Date.now() + HELD_WAIT_MS
  for (;;) {
    const [row] = await db.query<{ deliveries: unknown; endpoints: unknown }>(HELD_SNAPSHOT)
    const held = heldButNotPaused({
      deliveries: parsed(row?.deliveries),
      endpoints: parsed(row?.endpoints),
      attempts: [],
      transitions: [],
    })
    if (held.length === 0 || Date.now() > deadline) return held
    await delay(200)
  }
}

/**
 * Drives what a healthy partner and operator would to the end: a receipt for each recording with an acked
 * delivery, a replay of each failed or unconfirmed one; resolves once nothing is left but confirmed,
 * cancelled and (if the queue is stuck) queued or held deliveries, or the time is up.
 */
async function drain(world: World): Promise<boolean> {
  const [first] = world.instances as [Instance]
  const deadline = Date.now() + DRAIN_TIMEOUT_MS
  for (let round = 0; Date.now() < deadline; round++) {
    // A removed endpoint's failed deliveries are left as they are: replaying them would hide that they exist.
    const rows = await first.platform.context.db.query<DrainRow>(
      `SELECT d.delivery_id::int, d.audio_id, d.enterprise_id::int, d.state FROM deliveries d
         JOIN endpoints ep ON ep.endpoint_id = d.endpoint_id
        WHERE d.state IN ('pending', 'in_flight', 'acked')
           OR (d.state IN ('failed', 'unconfirmed') AND ep.removed_at IS NULL)
        ORDER BY d.delivery_id`,
    )
    if (rows.length === 0) return true
    // Waiting for the dispatchers first: most acked ones are being confirmed by the receivers' callbacks.
    if (round % 10 === 9) await nudge(world, rows)
    await delay(100)
  }
  return false
}

interface DrainRow {
  delivery_id: number
  audio_id: string
  enterprise_id: number
  state: string
}

async function nudge(world: World, rows: DrainRow[]) {
  const [first, second] = world.instances as [Instance, Instance]
  const acked = new Set(
    rows.filter((r) => r.state === 'acked').map((r) => `${r.enterprise_id} ${r.audio_id}`),
  )
  for (const key of acked) {
    const [enterpriseId, audioId] = key.split(' ') as [string, string]
    const partner = world.partners.find((p) => p.enterpriseId === Number(enterpriseId))
    if (partner) await world.callBack(second, partner, audioId)
  }
  for (const row of rows.filter((r) => r.state === 'failed' || r.state === 'unconfirmed')) {
    await first.admin.replayDelivery(row.delivery_id).catch(() => {})
  }
}

/** pino's error level: the lines reported with the run, with those that fail it. */
const ERROR_LEVEL = 50

/** A line telling of a deadlock or a failed serialization, or of a request answered 5xx. */
function isFailure(line: LogCapture['lines'][number]): boolean {
  const err = line.err as { message?: string } | undefined
  const res = line.res as { statusCode?: number } | undefined
  return /deadlock|could not serialize/.test(err?.message ?? '') || (res?.statusCode ?? 0) >= 500
}

/** The platform's error lines and failures, counted by message and error. */
function loggedErrors(lines: LogCapture['lines']): string {
  const counts = new Map<string, number>()
  for (const line of lines) {
    const err = line.err as { message?: string; where?: string } | undefined
    const request = line.req as { method?: string; url?: string } | undefined
    const key = [
      line.msg ?? '?',
      err?.message,
      request && `${request.method} ${request.url?.replace(/\d+/g, 'N')}`,
      err?.where?.split('\n')[0],
    ]
      .filter(Boolean)
      .join(': ')
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return [...counts].map(([k, n]) => `${k} ×${n}`).join('; ')
}

function report(world: World, snapshot: Snapshot, violations: Violation[]): string {
  const lines: string[] = []
  const states = new Map<string, number>()
  for (const d of snapshot.deliveries) states.set(d.state, (states.get(d.state) ?? 0) + 1)
  lines.push(
    `deliveries: ${snapshot.deliveries.length} (${[...states].map(([s, n]) => `${s} ${n}`).join(', ')})`,
  )
  const opCounts = new Map<string, number>()
  for (const op of world.ops) opCounts.set(op.op, (opCounts.get(op.op) ?? 0) + 1)
  lines.push(`operations: ${[...opCounts].map(([s, n]) => `${s} ${n}`).join(', ')}`)
  lines.push(
    `arrivals: ${world.arrivals.length}; callbacks: ${[...world.callbackCodes].map(([c, n]) => `${c}×${n}`).join(', ')}`,
  )
  const byInvariant = new Map<string, Violation[]>()
  for (const v of violations) byInvariant.set(v.invariant, [...(byInvariant.get(v.invariant) ?? []), v])
  for (const [invariant, list] of byInvariant) {
    lines.push(`VIOLATED ${invariant}: ${list.length}`)
    for (const v of list.slice(0, 5)) lines.push(`  ${v.detail}`, ...historyOf(world, snapshot, v.deliveryId))
  }
  return lines.join('\n')
}

/** A delivery's transitions and arrivals, and the operations on its recording, for a violation's report. */
function historyOf(world: World, snapshot: Snapshot, deliveryId: number): string[] {
  const d = snapshot.deliveries.find((x) => x.deliveryId === deliveryId)
  if (!d) return []
  const t0 = world.startedAtMs
  const line = snapshot.deliveries.filter((x) => x.audioId === d.audioId && x.endpointId === d.endpointId)
  const ids = new Set(line.map((x) => x.deliveryId))
  const events = [
    ...snapshot.transitions
      .filter((t) => ids.has(t.deliveryId))
      .map((t) => ({ at: t.atMs, text: `delivery ${t.deliveryId} ${t.from ?? 'new'} → ${t.to}` })),
    ...world.arrivals
      .filter((a) => a.audioId === d.audioId && a.endpointId === d.endpointId)
      .map((a) => ({
        at: a.atMs,
        text: `receiver got ${a.eventType} ${line.find((x) => x.eventId === a.eventId)?.deliveryId}, answered ${a.status}`,
      })),
    ...world.ops
      .filter((o) => new RegExp(`(^| )(${d.audioId}|endpoint ${d.endpointId})( |,|$)`).test(o.target))
      .map((o) => ({
        at: o.startMs + t0,
        text: `op ${o.op} on ${o.instance} (returned at +${o.endMs} ms): ${o.target} (${o.outcome})`,
      })),
    ...world.removals
      .filter((r) => r.endpointId === d.endpointId)
      .map((r) => ({ at: r.committedByMs, text: `endpoint ${r.endpointId}'s removal returned` })),
  ]
  return events.sort((a, b) => a.at - b.at).map((e) => `    +${Math.round(e.at - t0)} ms ${e.text}`)
}

describe("two platform instances on one PostgreSQL: random interleavings keep the push queue's invariants", {
  timeout: (SECONDS + 300) * 1000,
  skip: !process.env.DATABASE_URL && 'DATABASE_URL is not set',
}, () => {
  let scratch: ScratchDatabase
  const instances: Instance[] = []
  let world: World | undefined
  const logs = new LogCapture()

  before(async () => {
    scratch = await scratchPostgresDatabase()
    const config = testConfig({ databaseUrl: scratch.url, ...settings })
    const first = keyed(await startPlatform({ config, logDestination: logs.destination }))
    // Migrated by the first instance; logged before the second starts and before any delivery exists.
    for (const statement of TRANSITION_LOG) await first.context.db.query(statement)
    const second = keyed(await startPlatform({ config, logDestination: logs.destination }))
    instances.push(
      { name: 'A', platform: first, admin: adminOf(first) },
      { name: 'B', platform: second, admin: adminOf(second) },
    )
  })
  after(async () => {
    await world?.close()
    for (const instance of instances) await instance.platform.close()
    // EARSHOT_STRESS_KEEP_DB=1 keeps the database of a run for reading its rows.
    if (process.env.EARSHOT_STRESS_KEEP_DB === '1')
      console.log(`two-instance stress: database kept at ${scratch?.url}`)
    else await scratch?.drop()
  })

  test(`${SECONDS} s of imports, updates, deletions, receipts, replays, endpoint changes and outages`, async () => {
    console.log(
      `two-instance stress: seed ${SEED} (EARSHOT_STRESS_SEED=${SEED} repeats this run's choices), ${SECONDS} s`,
    )
    const current = new World(instances, SEED)
    world = current
    const [first, second] = instances as [Instance, Instance]
    for (const name of ['Acme', 'Globex']) {
      const partner = await current.addPartner(name)
      await current.addEndpoint(first, partner)
      await current.addEndpoint(second, partner, [
        'recording.audio_ready',
        'recording.updated',
        'recording.deleted',
      ])
    }
    const errors = new Map<string, number>()
    const endsAt = Date.now() + SECONDS * 1000
    await Promise.all(
      Array.from({ length: WORKERS }, (_, n) => worker(current, n, seeded(SEED + n + 1), endsAt, errors)),
    )
    const ranMs = Date.now() - current.startedAtMs
    await current.settled()
    const heldEarly = await heldOnUnpaused(first.platform.context.db)
    await heal(current)
    const drained = await drain(current)
    await current.settled()
    const snapshot = await snapshotOf(first.platform.context.db)
    const arrivals: Arrival[] = current.arrivals
    const found = [...heldEarly, ...checkInvariants(snapshot, arrivals, current.removals)]
    const violations = found.filter(
      (v, i) => found.findIndex((w) => w.invariant === v.invariant && w.deliveryId === v.deliveryId) === i,
    )
    console.log(
      `two-instance stress (seed ${SEED}): ran ${ranMs} ms, drained ${drained ? 'in' : 'NOT within'} ${Date.now() - current.startedAtMs - ranMs} ms\n` +
        `refused operations: ${[...errors].map(([k, n]) => `${k} ×${n}`).join('; ') || 'none'}\n` +
        `platform errors logged: ${loggedErrors(logs.lines.filter((l) => l.level >= ERROR_LEVEL || isFailure(l))) || 'none'}\n${report(current, snapshot, violations)}`,
    )
    assert.equal(
      loggedErrors(logs.lines.filter(isFailure)),
      '',
      `seed ${SEED}: the platform logged deadlocks or 5xx answers (see the report above)`,
    )
    assert.deepEqual(
      [...new Set(violations.map((v) => v.invariant))],
      [],
      `seed ${SEED}: ${violations.length} violations (see the report above)`,
    )
  })
})
