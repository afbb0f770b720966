import type { PlatformConfig } from '../config/config.js'
import type { RecordingEvents } from '../recordings/recording-events.js'
import type { Database } from '../storage/database.js'
import type { Media } from './media-service.js'

/** What the stored-audio routes read of the running platform. */
export interface MediaContext {
  config: PlatformConfig
  db: Database
  media: Media
  clock: () => number
  recordingEvents: RecordingEvents
  randomBytes: (size: number) => Buffer
}
