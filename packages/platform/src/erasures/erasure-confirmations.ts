import { recordingsThePartnerHad } from '../deliveries/delivery-erasure.js'
import { recordingExists } from '../recordings/recording-store.js'
import type { Database } from '../storage/database.js'

/** What a partner's erasure confirmation came to: recorded, or refused for a recording not deleted or never had. */
export type ErasureConfirmation = 'confirmed' | 'not-deleted' | 'never-had'

/**
 * Records that the partner erased a deleted recording it had, and flags the erasures covering it for the
 * runner to look at. Repeating it changes nothing more.
 */
export async function confirmErasure(
  db: Database,
  enterpriseId: number,
  audioId: string,
): Promise<ErasureConfirmation> {
  return db.transaction(async (tx) => {
    if (await recordingExists(tx, enterpriseId, audioId)) return 'not-deleted'
    if (!(await recordingsThePartnerHad(tx, enterpriseId, [audioId])).has(audioId)) return 'never-had'
    await tx.query(
      `WITH added AS (INSERT INTO erasure_confirmations (audio_id, enterprise_id) VALUES ($1, $2)
                      ON CONFLICT (audio_id) DO NOTHING RETURNING audio_id)
       UPDATE erasures SET confirmations_changed = true
        WHERE confirmed_at IS NULL
          AND erasure_id IN (SELECT erasure_id FROM erasure_recordings WHERE audio_id IN (SELECT audio_id FROM added))`,
      [audioId, enterpriseId],
    )
    return 'confirmed'
  })
}
