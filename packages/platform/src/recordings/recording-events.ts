import type { PushEventType } from '@earshot/protocol'
import type { Queryable } from '../storage/database.js'

export type EventType = (typeof PushEventType)[keyof typeof PushEventType]

/** Something partners hear of: a part of a recording became available, or the recording was deleted. */
export interface RecordingEvent {
  audioId: string
  eventType: EventType
}

/**
 * What the recordings tell the rest of the platform, inside the transaction that changed them, so that no
 * change is stored without what follows from it (deliveries/ schedules deliveries from these; recordings never
 * touch a delivery).
 */
export interface RecordingEvents {
  announce(tx: Queryable, enterpriseId: number, events: readonly RecordingEvent[]): Promise<void>
}
