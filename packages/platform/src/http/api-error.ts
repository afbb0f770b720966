import { catalogueEntry, type ResponseCodeValue } from '@earshot/protocol'

/** A refusal with a catalogue code; the message names the field or rule. */
export class ApiError extends Error {
  constructor(
    readonly code: ResponseCodeValue,
    message: string = catalogueEntry(code).defaultMessage,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
    this.name = 'ApiError'
  }
}
