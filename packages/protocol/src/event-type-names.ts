import { EVENT_TYPES, type PushEventTypeValue } from './messages.js'

/** An event type without its `recording.` prefix (`transcript_ready`): how tables and short names write it. */
export function shortEventType(eventType: string): string {
  return eventType.replace(/^recording\./, '')
}

/** The event type named by its full name or its short one; undefined for no event type. */
export function eventTypeNamed(name: string): PushEventTypeValue | undefined {
  return EVENT_TYPES.find((type) => type === name || shortEventType(type) === name)
}
