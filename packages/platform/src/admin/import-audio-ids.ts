import { createHash } from 'node:crypto'
import { InvalidParameterError } from '@earshot/protocol'
import { platformAudioId, type RecordingInput } from '../recordings/recording-input.js'

/**
 * The audioIds of one JSON Lines file, each used by one line only. A line without an audioId gets
 * one derived from the enterprise and the line's content, so that importing the same file again
 * finds the recordings it stored the first time instead of adding copies. The content is every
 * field but the transcript (a line that later gains a transcript keeps its audioId, so the
 * transcript is attached) plus how many earlier lines had the same content (identical lines stay
 * distinct recordings).
 */
export class ImportAudioIds {
  private readonly lineOf = new Map<string, number>()
  /** For lines without an audioId: how many lines so far had each content, keyed by its first id. */
  private readonly occurrences = new Map<string, number>()

  constructor(private readonly enterpriseId: number) {}

  /** The line's audioId; InvalidParameterError when an earlier line of the file has it. */
  assign(input: RecordingInput, lineNumber: number): string {
    const audioId = input.audioId ?? this.derive(input)
    const seen = this.lineOf.get(audioId)
    if (seen !== undefined) throw new InvalidParameterError('audioId', `repeats the audioId of line ${seen}`)
    this.lineOf.set(audioId, lineNumber)
    return audioId
  }

  private derive(input: RecordingInput): string {
    const content = JSON.stringify([
      this.enterpriseId,
      input.deviceUid,
      input.title,
      input.recordedAt,
      input.denoiseUrl ?? null,
      input.recordDuration ?? null,
    ])
    const first = derivedAudioId(content, 0)
    const occurrence = this.occurrences.get(first) ?? 0
    this.occurrences.set(first, occurrence + 1)
    return occurrence === 0 ? first : derivedAudioId(content, occurrence)
  }
}

function derivedAudioId(content: string, occurrence: number): string {
  return platformAudioId(createHash('sha256').update(`${occurrence}\n${content}`).digest())
}
