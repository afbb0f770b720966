import {
  type EnvelopeKey,
  InvalidParameterError,
  isTranscriptData,
  type KeyResolver,
  loadKey,
  open,
  ProtocolError,
  PushEvent,
  PushEventType,
  parseTranscriptSentences,
  ResponseCode,
  type ResponseCodeValue,
  type TranscriptSentence,
} from '@earshot/protocol'
import { EarshotConfigError } from '../client/errors.js'

/**
 * A push of a recording as handed to onRecording: `recording.audio_ready`, `recording.transcript_ready`,
 * or `recording.updated` (the recording changed after it was pushed, e.g. its audio was replaced: its data
 * is the recording as it is now). For the transcript form, its sentences parsed.
 */
export type ReceivedPush = Exclude<PushEvent, ReceivedDeletion> & {
  /** `data.transcriptSentences` parsed, when data is the transcript form; undefined for the audio form. */
  sentences: TranscriptSentence[] | undefined
}

/** A `recording.deleted` push as handed to onDeleted; its data is `{}`. */
export type ReceivedDeletion = Extract<PushEvent, { eventType: typeof PushEventType.DELETED }>

export type Received = ReceivedPush | ReceivedDeletion

/** A push refused with its catalogue code. */
export class Refusal extends Error {
  constructor(
    readonly responseCode: ResponseCodeValue,
    message: string,
  ) {
    super(message)
  }
}

/** The keys a receiver opens pushes with: one secret (optionally of one keyVersion), or several by keyVersion. */
export interface KeyOptions {
  secret?: string | undefined
  keyVersion?: number | undefined
  keys?: Record<number, string> | undefined
}

/** Parses, opens and checks one push body; refusals carry their catalogue code. */
export function openPush(text: string, keys: KeyResolver) {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new Refusal(ResponseCode.INVALID_REQUEST, 'the body is not JSON')
  }
  try {
    const { envelope, plaintext } = open(json, keys)
    const event = PushEvent.parse(plaintext)
    if (event.eventId !== envelope.eventId) {
      throw new InvalidParameterError('eventId', "must equal the envelope's eventId")
    }
    // No database can store it; refused here rather than answered 5000 on every retry.
    for (const field of ['eventId', 'audioId'] as const) {
      if (event[field].includes('\u0000')) {
        throw new InvalidParameterError(field, 'must not contain the character U+0000')
      }
    }
    if (event.eventType === PushEventType.DELETED) return { envelope, event }
    const sentences = isTranscriptData(event.data)
      ? parseSentences(event.data.transcriptSentences)
      : undefined
    const received: Received = { ...event, sentences }
    return { envelope, event: received }
  } catch (error) {
    if (error instanceof ProtocolError) throw new Refusal(error.responseCode, error.message)
    throw error
  }
}

function parseSentences(serialized: string): TranscriptSentence[] {
  try {
    return parseTranscriptSentences(serialized)
  } catch (error) {
    if (error instanceof InvalidParameterError) {
      throw new InvalidParameterError(`data.${error.field}`, error.message.replace(/^[^:]*: /, ''))
    }
    throw error
  }
}

export function keyResolver(options: KeyOptions): KeyResolver {
  const load = (secret: unknown, name: string): EnvelopeKey => {
    try {
      return loadKey(secret as string)
    } catch (error) {
      throw new EarshotConfigError(`${name}: ${messageOf(error)}`, { cause: error })
    }
  }
  if (options.keys !== undefined && options.secret !== undefined) {
    throw new EarshotConfigError('give either secret (with an optional keyVersion) or keys, not both')
  }
  if (options.secret !== undefined) {
    const key = load(options.secret, 'secret')
    const only = options.keyVersion
    if (only === undefined) return () => key
    if (!Number.isSafeInteger(only) || only < 1) {
      throw new EarshotConfigError('keyVersion must be a positive whole number')
    }
    return (keyVersion) => (keyVersion === only ? key : undefined)
  }
  if (options.keys === undefined || typeof options.keys !== 'object') {
    throw new EarshotConfigError('give the secret, or keys by keyVersion')
  }
  const byVersion = new Map<number, EnvelopeKey>()
  for (const [version, secret] of Object.entries(options.keys)) {
    if (!/^[1-9]\d{0,14}$/.test(version)) {
      throw new EarshotConfigError(
        `keys: ${JSON.stringify(version)} is not a keyVersion (a positive whole number)`,
      )
    }
    byVersion.set(Number(version), load(secret, `keys[${version}]`))
  }
  if (byVersion.size === 0) throw new EarshotConfigError('keys must hold at least one secret')
  return (keyVersion) => byVersion.get(keyVersion)
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message || error.name : String(error)
}
