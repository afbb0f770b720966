import { randomBytes as cryptoRandomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import type { TranscriptSentence } from '@earshot/protocol'
import type { PlatformContext } from '../context/platform-context.js'
import {
  anyEnterprise,
  createEnterprise,
  type EnterpriseCredentials,
} from '../enterprises/enterprise-store.js'
import type { MediaStore } from '../media/media-store.js'
import { type StoredAudio, saveStoredAudio } from '../media/stored-audio.js'
import { storeClaimed } from '../media/upload-claims.js'
import { STORED_AUDIO } from '../recordings/recording-data.js'
import { insertRecordings, type NewRecording } from '../recordings/recording-store.js'
import type { Queryable } from '../storage/database.js'
import { DEMO_AUDIO_MS, demoChime } from './demo-audio.js'

export const DEMO_ENTERPRISE_NAME = 'Demo Enterprise'
export const DEMO_RECORDINGS = 300

const devices = [
  'REC-ALPHA-01',
  'REC-ALPHA-02',
  'WEAR-BETA-07',
  'WEAR-BETA-08',
  'DESK-GAMMA-3',
  'PEN-DELTA-11',
]
/** Sample vocabulary shared by the demo and the benchmark data set. */
export const sampleTopics = [
  'Weekly sync',
  'Customer call',
  'Site visit notes',
  'Interview',
  'Lecture',
  'Voice memo',
  'Stand-up',
]
export const samplePhrases = [
  'Let us start with the open items.',
  'The delivery moved to next Tuesday.',
  'Please send the figures before Friday.',
  'We agreed to try the second option.',
  'Battery life was the main complaint.',
  'Thanks everyone, that is all for today.',
]

/**
 * On a database with no enterprise yet, creates the demo enterprise and DEMO_RECORDINGS recordings:
 * six devices, the last 30 days, a third audio only (set B), a third transcript only and a third
 * with both (set A); the audio is a chime Earshot stores (demo-audio.ts). Returns its credentials, or undefined when the database already has enterprises.
 */
export async function seedDemoIfEmpty(
  { db, recordingEvents, media }: Pick<PlatformContext, 'db' | 'recordingEvents' | 'media'>,
  now: number,
  randomBytes: (size: number) => Buffer = cryptoRandomBytes,
): Promise<EnterpriseCredentials | undefined> {
  if (await anyEnterprise(db)) return undefined
  const credentials = await createEnterprise(db, DEMO_ENTERPRISE_NAME, null, randomBytes)
  const { enterpriseId } = credentials
  const recordings = demoRecordings(now)
  const files = await storeDemoAudio(db, media.store, enterpriseId, recordings, randomBytes)
  await db.transaction(async (tx) => {
    await insertRecordings(tx, enterpriseId, recordings, recordingEvents)
    await saveStoredAudio(tx, files)
  })
  return credentials
}

/** Stores a chime as the audio of each recording with an audio part, which then names it. */
async function storeDemoAudio(
  db: Queryable,
  store: MediaStore,
  enterpriseId: number,
  recordings: NewRecording[],
  randomBytes: (size: number) => Buffer,
): Promise<StoredAudio[]> {
  const files: StoredAudio[] = []
  for (const [i, recording] of recordings.entries()) {
    if (recording.denoiseUrl === undefined) continue
    const key = `${enterpriseId}/${randomBytes(16).toString('hex')}`
    const chime = demoChime(i)
    const owner = { key, enterpriseId, audioId: recording.audioId }
    const stored = await storeClaimed(db, store, owner, Readable.from([chime]), {
      maxBytes: chime.length,
      contentType: 'audio/wav',
    })
    recording.denoiseUrl = `${STORED_AUDIO}${stored.sha256}`
    recording.recordDuration = DEMO_AUDIO_MS
    files.push({ audioId: recording.audioId, enterpriseId, key, contentType: 'audio/wav', ...stored })
  }
  return files
}

export function demoRecordings(now: number): NewRecording[] {
  const span = 30 * 86_400_000
  return Array.from({ length: DEMO_RECORDINGS }, (_, i) => {
    const recordedAt = new Date(now - Math.floor((span * (i + 0.5)) / DEMO_RECORDINGS)).toISOString()
    const durationMs = 30_000 + ((i * 7919) % 600_000)
    const kind = i % 3 // 0: audio only, 1: transcript only, 2: both
    const sentences: TranscriptSentence[] = Array.from({ length: 2 + (i % 4) }, (_, s) => ({
      text: samplePhrases[(i + s) % samplePhrases.length] as string,
      beginTime: s * 4000,
      endTime: s * 4000 + 3500,
    }))
    const text = sentences.map((sentence) => sentence.text).join(' ')
    return {
      audioId: `demo-${String(DEMO_RECORDINGS - i).padStart(4, '0')}`,
      deviceUid: devices[i % devices.length] as string,
      title: `${sampleTopics[i % sampleTopics.length]} #${DEMO_RECORDINGS - i}`,
      recordedAt,
      ...(kind !== 1 && {
        denoiseUrl: `https://media.earshot.example/demo/${i}.mp3`,
        recordDuration: durationMs,
      }),
      ...(kind !== 0 && {
        transcript: {
          transcriptId: 100_000 + i,
          transcriptText: text,
          sentences,
          durationMs,
          wordsCount: text.split(/\s+/).length,
        },
      }),
    }
  })
}
