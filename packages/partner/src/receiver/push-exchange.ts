import type { IncomingHttpHeaders } from 'node:http'

/** Where the platform POSTs pushes unless told otherwise. */
export const DEFAULT_PUSH_PATH = '/earshot/push'

/** A push request as any transport sees it. */
export interface PushRequest {
  body: string | Uint8Array
  headers: IncomingHttpHeaders | Record<string, string | string[] | undefined>
}

/** `{code, msg}`; HTTP status = code / 10. */
export interface PushAnswerBody {
  code: number
  msg: string
}

export interface PushAnswer {
  status: number
  body: PushAnswerBody
  /**
   * Call once the answer has been sent: the receipt callback of a 2000 starts only then
   * (a partner never calls back on the answer path). Without the call it starts after the outbox's
   * answer grace.
   */
  afterResponse(): void
}
