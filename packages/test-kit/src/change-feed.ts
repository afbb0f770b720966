import type { RunningPlatform } from '@earshot/platform'
import { eventually } from './eventually.js'

/**
 * Waits until every change made so far to the enterprise is numbered, so that the change feed shows it. A
 * change is numbered once every transaction older than it has ended on the whole server: another
 * database's (a suite running beside this one on the same PostgreSQL) may hold it back for a moment.
 */
export async function everyChangeNumbered(platform: RunningPlatform, enterpriseId: number): Promise<void> {
  const { db } = platform.context
  await eventually(
    async () => {
      await db.query('SELECT number_recording_changes(10000)')
      const [row] = await db.query<{ queued: boolean }>(
        'SELECT EXISTS (SELECT 1 FROM recording_change_queue WHERE enterprise_id = $1) AS queued',
        [enterpriseId],
      )
      return row?.queued === false
    },
    30_000,
    'every change numbered',
  )
}
