import { createHash } from 'node:crypto'
import { ResponseCode } from '@earshot/protocol'
import type { Actor } from '../audit/audit-entry.js'
import { noteAudit } from '../audit/audited-changes.js'
import { ApiError } from '../http/api-error.js'
import { audioIdsOfDevice, knownAudioIds } from '../recordings/recording-erasure.js'
import type { Database, Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'

/*
 * Erasure requests as stored: what each covers, where it stands, and each endpoint's deletion pushes. An
 * erasure never stores the deviceUid it erases, only its subject hash.
 */

export type ErasureKind = 'device' | 'audio' | 'retention'
export type ErasureState = 'running' | 'complete' | 'confirmed'

export interface NewErasure {
  enterpriseId: number
  subject: { deviceUid: string } | { audioIds: readonly string[] }
  reason: string
  requestedBy: Actor
}

export interface ErasureSummary {
  erasureId: number
  enterpriseId: number
  kind: ErasureKind
  subjectHash: string | null
  reason: string
  requestedBy: Actor
  requestedAt: string
  state: ErasureState
  /** How many recordings it covers (a retention run: how many it has found so far). */
  recordings: number
  deletedAt: string | null
  completedAt: string | null
  confirmedAt: string | null
}

export interface EndpointProgress {
  endpointId: number
  /** Deletion pushes of its recordings to the endpoint. */
  deletions: number
  acknowledged: number
  /** Of those, the recordings its partner confirmed erased. */
  confirmed: number
}

export interface ErasureDetail extends ErasureSummary {
  endpoints: EndpointProgress[]
}

/** Who the erasure of a device's recordings is about, to whoever knows the device: SHA-256 of "enterpriseId:deviceUid". */
function subjectHash(enterpriseId: number, deviceUid: string): string {
  return createHash('sha256').update(`${enterpriseId}:${deviceUid}`).digest('hex')
}

/** Records an erasure request and the recordings it covers; the runner (erasure-runner.ts) carries it out. */
export async function createErasure(
  db: Database,
  request: NewErasure,
): Promise<{ erasureId: number; recordings: number }> {
  return db.transaction(async (tx) => {
    const { enterpriseId, subject } = request
    const audioIds =
      'deviceUid' in subject
        ? await audioIdsOfDevice(tx, enterpriseId, subject.deviceUid)
        : await knownAudioIdsOrRefuse(tx, enterpriseId, subject.audioIds)
    const [row] = await tx.query<{ erasure_id: number }>(
      `INSERT INTO erasures (enterprise_id, kind, subject_hash, reason, requested_by)
       VALUES ($1, $2, $3, $4, $5) RETURNING erasure_id`,
      [
        enterpriseId,
        'deviceUid' in subject ? 'device' : 'audio',
        'deviceUid' in subject ? subjectHash(enterpriseId, subject.deviceUid) : null,
        request.reason,
        JSON.stringify(request.requestedBy),
      ],
    )
    const erasureId = Number((row as { erasure_id: number }).erasure_id)
    noteAudit({ target: { enterpriseId } })
    await coverRecordings(tx, erasureId, audioIds)
    return { erasureId, recordings: audioIds.length }
  })
}

/** Starts a retention run of an enterprise: what was recorded before the cutoff, found as it goes. */
export async function createRetentionRun(
  db: Queryable,
  enterpriseId: number,
  cutoff: string,
  actor: Actor,
): Promise<number> {
  const [row] = await db.query<{ erasure_id: number }>(
    `INSERT INTO erasures (enterprise_id, kind, cutoff, reason, requested_by)
     VALUES ($1, 'retention', $2, 'retention policy', $3) RETURNING erasure_id`,
    [enterpriseId, cutoff, JSON.stringify(actor)],
  )
  return Number((row as { erasure_id: number }).erasure_id)
}

/** Whether a retention run of the enterprise is still deleting. */
export async function retentionRunning(db: Queryable, enterpriseId: number): Promise<boolean> {
  const rows = await db.query(
    `SELECT 1 FROM erasures WHERE enterprise_id = $1 AND kind = 'retention' AND deleted_at IS NULL LIMIT 1`,
    [enterpriseId],
  )
  return rows.length > 0
}

/** Adds recordings to what an erasure covers (a retention run's next batch). */
export async function coverRecordings(
  tx: Queryable,
  erasureId: number,
  audioIds: readonly string[],
): Promise<void> {
  if (audioIds.length === 0) return
  await tx.query(
    `INSERT INTO erasure_recordings (erasure_id, audio_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
    [erasureId, audioIds],
  )
}

async function knownAudioIdsOrRefuse(
  tx: Queryable,
  enterpriseId: number,
  audioIds: readonly string[],
): Promise<string[]> {
  const asked = [...new Set(audioIds)]
  const known = new Set(await knownAudioIds(tx, enterpriseId, asked))
  const unknown = asked.filter((audioId) => !known.has(audioId))
  if (unknown.length > 0) {
    throw new ApiError(
      ResponseCode.NOT_FOUND,
      `enterprise ${enterpriseId} has never had ${unknown.length === 1 ? 'the recording' : `${unknown.length} of these recordings:`} ${unknown
        .slice(0, 5)
        .map((audioId) => JSON.stringify(audioId))
        .join(', ')}${unknown.length > 5 ? ', …' : ''}; check the audioIds`,
    )
  }
  return asked
}

const SUMMARY_COLUMNS = `e.erasure_id AS "erasureId", e.enterprise_id AS "enterpriseId", e.kind,
  e.subject_hash AS "subjectHash", e.reason, e.requested_by AS "requestedBy",
  ${isoTime('e.requested_at')} AS "requestedAt",
  CASE WHEN e.confirmed_at IS NOT NULL THEN 'confirmed' WHEN e.completed_at IS NOT NULL THEN 'complete'
       ELSE 'running' END AS state,
  (SELECT count(*)::int FROM erasure_recordings r WHERE r.erasure_id = e.erasure_id) AS recordings,
  ${isoTime('e.deleted_at')} AS "deletedAt", ${isoTime('e.completed_at')} AS "completedAt",
  ${isoTime('e.confirmed_at')} AS "confirmedAt"`

/** The newest erasures first (at most 500), of one enterprise or all, within a scope (null: every enterprise). */
export async function listErasures(
  db: Queryable,
  filter: { enterpriseId?: number | undefined; scope: readonly number[] | null },
): Promise<ErasureSummary[]> {
  const rows = await db.query<ErasureSummary>(
    `SELECT ${SUMMARY_COLUMNS} FROM erasures e
      WHERE ($1::int8 IS NULL OR e.enterprise_id = $1) AND ($2::int8[] IS NULL OR e.enterprise_id = ANY($2))
      ORDER BY e.erasure_id DESC LIMIT 500`,
    [filter.enterpriseId ?? null, filter.scope],
  )
  return rows.map(withActor)
}

/** One erasure with each endpoint's progress; undefined when there is none in the scope. */
export async function showErasure(
  db: Queryable,
  erasureId: number,
  scope: readonly number[] | null,
): Promise<ErasureDetail | undefined> {
  const [row] = await db.query<ErasureSummary>(
    `SELECT ${SUMMARY_COLUMNS} FROM erasures e
      WHERE e.erasure_id = $1 AND ($2::int8[] IS NULL OR e.enterprise_id = ANY($2))`,
    [erasureId, scope],
  )
  if (!row) return undefined
  const endpoints = await db.query<EndpointProgress>(
    `SELECT d.endpoint_id AS "endpointId", count(*)::int AS deletions,
            count(*) FILTER (WHERE d.acknowledged)::int AS acknowledged,
            count(c.audio_id)::int AS confirmed
       FROM erasure_deletions d
       LEFT JOIN erasure_confirmations c ON c.audio_id = d.audio_id AND c.enterprise_id = $2
      WHERE d.erasure_id = $1 GROUP BY d.endpoint_id ORDER BY d.endpoint_id`,
    [erasureId, row.enterpriseId],
  )
  return { ...withActor(row), endpoints }
}

function withActor(row: ErasureSummary): ErasureSummary {
  const requestedBy = typeof row.requestedBy === 'string' ? JSON.parse(row.requestedBy) : row.requestedBy
  return { ...row, erasureId: Number(row.erasureId), enterpriseId: Number(row.enterpriseId), requestedBy }
}
