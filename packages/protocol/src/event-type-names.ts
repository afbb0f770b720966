export const PushEventType = {
  AUDIO_READY: 'recording.audio_ready',
  TRANSCRIPT_READY: 'recording.transcript_ready',
  DELETED: 'recording.deleted',
  /** The recording changed after it was pushed (e.g. its audio was replaced); data is the recording as it is now. */
  UPDATED: 'recording.updated',
} as const

/** Every event type a push may carry, in the order the API lists them: add one here, nowhere else in TypeScript. */
export const EVENT_TYPES: readonly PushEventTypeValue[] = Object.values(PushEventType)
export type PushEventTypeValue = (typeof PushEventType)[keyof typeof PushEventType]

/** An event type without its `recording.` prefix (`transcript_ready`): how tables and short names write it. */
export function shortEventType(eventType: string): string {
  return eventType.replace(/^recording\./, '')
}

/** The event type named by its full name or its short one; undefined for no event type. */
export function eventTypeNamed(name: string): PushEventTypeValue | undefined {
  return EVENT_TYPES.find((type) => type === name || shortEventType(type) === name)
}
