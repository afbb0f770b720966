import type { PlatformConfig } from '../config/config.js'
import type { Database } from '../storage/database.js'
import type { AudioLinkSource } from './recording-data.js'
import type { RecordingEvents } from './recording-events.js'

/** What the recordings' routes read of the running platform. */
export interface RecordingsContext {
  config: PlatformConfig
  db: Database
  media: AudioLinkSource
  recordingEvents: RecordingEvents
  randomBytes: (size: number) => Buffer
}
