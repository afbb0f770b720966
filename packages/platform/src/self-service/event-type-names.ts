import { EVENT_TYPES } from '@earshot/protocol'
import type { EventType } from '../recordings/recording-events.js'

/** An event type by its full name, given its full or its short name (`transcript_ready`). */
export function fullEventType(name: string): EventType {
  return (EVENT_TYPES.find((type) => type === name || type === `recording.${name}`) ?? name) as EventType
}
