import { EVENT_TYPES, eventTypeNamed, type PushEventTypeValue, shortEventType } from '@earshot/protocol'
import { InvalidArgumentError } from 'commander'

export { shortEventType }

export const EVENT_NAMES = EVENT_TYPES.map(shortEventType).join(', ')

/** An event type by its short name (transcript_ready) or full one (recording.transcript_ready). */
export function eventTypeArgument(raw: string): PushEventTypeValue {
  const name = raw.trim()
  const found = eventTypeNamed(name)
  if (!found) {
    throw new InvalidArgumentError(
      `unknown event type ${name}: give one of ${EVENT_NAMES} (or ${EVENT_TYPES[0]} and so on)`,
    )
  }
  return found
}

/** Event types, comma-separated, by short or full name; each once. */
export function eventTypesArgument(raw: string): PushEventTypeValue[] {
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  if (names.length === 0) {
    throw new InvalidArgumentError(`no event type given: give one or more of ${EVENT_NAMES}, comma-separated`)
  }
  return [...new Set(names.map(eventTypeArgument))]
}
