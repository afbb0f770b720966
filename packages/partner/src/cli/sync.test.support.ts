/** What the sync tests share (not shipped: `*.test.*` is left out of the package, and not run as a test). */
import { join } from 'node:path'
import type { RecordingData } from '@earshot/protocol'
import type { EarshotClient } from '../client/earshot-client.js'
import { openDatabase } from '../storage/database.js'

/** What the mirror in `data` holds (read once no sync has it open), by audioId. */
export async function mirrorOf(data: string): Promise<Map<string, RecordingData>> {
  const db = await openDatabase({ dataDir: join(data, 'db') })
  try {
    const rows = await db.query<{ audio_id: string; data: RecordingData }>(
      'SELECT audio_id, data FROM mirror_recordings ORDER BY audio_id',
    )
    return new Map(rows.map((row) => [row.audio_id, row.data]))
  } finally {
    await db.close()
  }
}

/** Every recording the platform answers the query with, by audioId. */
export async function platformRecordingsOf(client: EarshotClient): Promise<Map<string, RecordingData>> {
  const recordings = new Map<string, RecordingData>()
  for await (const page of client.iterateAudios({ size: 100 })) {
    for (const { audioId, data } of page.items) recordings.set(audioId, data)
  }
  return new Map([...recordings].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}
