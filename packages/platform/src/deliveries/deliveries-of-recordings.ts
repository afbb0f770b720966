import { PushEventType } from '@earshot/protocol'
import type { RecordingEvents } from '../recordings/recording-events.js'
import { cancelDeliveries } from './delivery-cancellations.js'
import { lockEndpointsOf, scheduleDeliveries } from './delivery-store.js'

/**
 * The push side of what recordings announce: a delivery per event to the enterprise's push URL; a deletion
 * first cancels every delivery of the recording not yet confirmed, its endpoints locked first (the lock
 * order of delivery-store.ts).
 */
export const deliveriesOfRecordings: RecordingEvents = {
  async announce(tx, enterpriseId, events) {
    if (events.some((event) => event.eventType === PushEventType.DELETED))
      await lockEndpointsOf(tx, enterpriseId)
    for (const event of events) {
      if (event.eventType === PushEventType.DELETED) await cancelDeliveries(tx, event.audioId)
    }
    await scheduleDeliveries(tx, enterpriseId, events)
  },
}
