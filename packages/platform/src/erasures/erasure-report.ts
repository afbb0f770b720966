import { sign } from 'node:crypto'
import canonicalize from 'canonicalize'
import type { Static } from 'typebox'
import type { Queryable } from '../storage/database.js'
import { isoTime } from '../storage/iso-time.js'
import type { ErasureReportSchema } from './erasure-contract.js'
import type { ErasureSigningKey } from './erasure-signing-key.js'
import { showErasure } from './erasure-store.js'

export type SignedErasureReport = Static<typeof ErasureReportSchema>

/**
 * The signed record of an erasure: what it covered (ids and counts, never content) and how far it went,
 * signed with Ed25519 over the RFC 8785 canonical JSON of the report. Undefined when there is none in the scope.
 */
export async function erasureReport(
  db: Queryable,
  erasureId: number,
  options: { scope: readonly number[] | null; key: ErasureSigningKey; nowMs: number },
): Promise<SignedErasureReport | undefined> {
  const erasure = await showErasure(db, erasureId, options.scope)
  if (!erasure) return undefined
  const covered = await db.query<{ audio_id: string; cutoff: string | null }>(
    `SELECT r.audio_id, ${isoTime('e.cutoff')} AS cutoff
       FROM erasures e LEFT JOIN erasure_recordings r ON r.erasure_id = e.erasure_id
      WHERE e.erasure_id = $1 ORDER BY r.audio_id`,
    [erasureId],
  )
  const report: SignedErasureReport['report'] = {
    format: 'earshot-erasure-report/1',
    issuedAt: new Date(options.nowMs).toISOString(),
    keyId: options.key.jwk.kid,
    ...erasure,
    recordedBefore: covered[0]?.cutoff ?? null,
    audioIds: covered.flatMap((row) => (row.audio_id === null ? [] : [row.audio_id])),
  }
  const signature = sign(null, Buffer.from(canonicalize(report) as string, 'utf8'), options.key.privateKey)
  return { report, signature: signature.toString('base64url') }
}
