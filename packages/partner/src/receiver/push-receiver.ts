import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  CHECK_HEADER,
  catalogueEntry,
  httpStatusOf,
  isCheckPush,
  type KeyResolver,
  PushEventType,
  ResponseCode,
  type ResponseCodeValue,
} from '@earshot/protocol'
import type { FastifyPluginAsync } from 'fastify'
import { EarshotConfigError } from '../client/errors.js'
import { chosenLogger, type LoggerOptions, type ReceiverLogger } from '../logging/receiver-logger.js'
import type { CallbackOutbox } from '../outbox/callback-outbox.js'
import { createFastifyPlugin, type PushReceiverPluginOptions } from './fastify-plugin.js'
import type { PushAnswer, PushRequest } from './push-exchange.js'
import {
  keyResolver,
  messageOf,
  openPush,
  type Received,
  type ReceivedDeletion,
  type ReceivedPush,
  Refusal,
} from './push-opening.js'

export type { ReceivedDeletion, ReceivedPush } from './push-opening.js'

interface CommonOptions extends LoggerOptions {
  /** Records receipts and sends the receipt callbacks once the answer went out. */
  outbox: CallbackOutbox
  /**
   * Stores the recording (an upsert: `recording.updated` brings a later state of a recording already
   * pushed, `event.eventType` says which). The push is answered 2000 only after it resolves; when it throws the answer
   * is 5000 and nothing is recorded, so the platform pushes again. Called once per eventId, except
   * after a crash between it and the outbox's record of the push (the platform pushes again) or when
   * receivers sharing one PostgreSQL get the same event at once: store idempotently, e.g. keyed by
   * (audioId, eventType).
   */
  onRecording(event: ReceivedPush): Promise<void>
  /**
   * Removes the recording `event.audioId` from your storage, its audio and any other copy included: the
   * platform deleted it. Resolve only once all of it is durably gone: the receipt callback then sent
   * carries `erased: true`, the partner's confirmation that it erased the recording. Called, answered
   * and confirmed like onRecording, and as idempotent: a recording already gone is no error. A push
   * of the same audioId arriving after it (a retry overtaken by the deletion) must not bring the
   * recording back: compare its occurredAt with the deletion's. Without onDeleted a deletion is
   * answered 5000 (and logged as an error): the platform pushes it again until its schedule runs out.
   */
  onDeleted?: ((event: ReceivedDeletion) => Promise<void>) | undefined
  /** Bodies over this are refused with 4130. Default 1 MiB. */
  bodyLimitBytes?: number | undefined
}

export type PushReceiverOptions = CommonOptions &
  (
    | {
        /** The enterprise's secret (44 characters of Base64, or 32 UTF-8 bytes). */
        secret: string
        /** When set, only envelopes of this keyVersion are opened; others are refused with 4012. */
        keyVersion?: number | undefined
        keys?: undefined
      }
    | {
        /** Secrets by keyVersion, e.g. the old and new key during a rotation. */
        keys: Record<number, string>
        secret?: undefined
        keyVersion?: undefined
      }
  )

export interface PushReceiver {
  /** Transport-free: one push in, the answer out. Never throws. */
  handle(request: PushRequest): Promise<PushAnswer>
  /** A `node:http` request listener (also an Express handler): mount it on the push path. */
  handler: (request: IncomingMessage, response: ServerResponse) => void
  /** A Fastify plugin serving POST on `path` (default /earshot/push), its own body parsing included. */
  fastifyPlugin: FastifyPluginAsync<PushReceiverPluginOptions>
  readonly bodyLimitBytes: number
}

const DEFAULT_BODY_LIMIT = 1024 * 1024
const noop = () => {}

/**
 * Receives pushes: opens and checks each one, refuses replays, answers a repeated eventId with 2000
 * without handing it over again, hands a new one to onRecording (a deletion to onDeleted), records it with
 * its receipt callback, answers 2000, and only then lets the outbox call back.
 */
export function createPushReceiver(options: PushReceiverOptions): PushReceiver {
  const receiver = new Receiver(options)
  const handle = (request: PushRequest) => receiver.handle(request)
  return {
    handle,
    handler: (request, response) => {
      receiver.serveNode(request, response).catch(() => response.destroy())
    },
    fastifyPlugin: createFastifyPlugin(handle, receiver.bodyLimitBytes),
    bodyLimitBytes: receiver.bodyLimitBytes,
  }
}

const answer = (code: ResponseCodeValue, msg: string, afterResponse: () => void = noop): PushAnswer => ({
  status: httpStatusOf(code),
  body: { code, msg },
  afterResponse,
})

class Receiver {
  readonly bodyLimitBytes: number
  readonly #keys: KeyResolver
  readonly #outbox: CallbackOutbox
  readonly #logger: ReceiverLogger
  readonly #onRecording: PushReceiverOptions['onRecording']
  readonly #onDeleted: PushReceiverOptions['onDeleted']
  /** Nonces being handled: the same envelope twice at once is a replay before the database says so. */
  readonly #nonces = new Set<string>()
  /** EventIds being handled, with whether the recording got stored. */
  readonly #events = new Map<string, Promise<boolean>>()

  constructor(options: PushReceiverOptions) {
    this.#keys = keyResolver(options)
    const { outbox } = options
    if (!outbox || typeof outbox.admit !== 'function') throw new EarshotConfigError('outbox is required')
    if (typeof options.onRecording !== 'function')
      throw new EarshotConfigError('onRecording must be a function')
    if (options.onDeleted !== undefined && typeof options.onDeleted !== 'function')
      throw new EarshotConfigError('onDeleted must be a function when given')
    this.bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT
    if (!Number.isSafeInteger(this.bodyLimitBytes) || this.bodyLimitBytes < 1) {
      throw new EarshotConfigError('bodyLimitBytes must be a positive whole number')
    }
    this.#outbox = outbox
    this.#logger = chosenLogger(options)
    this.#onRecording = options.onRecording
    this.#onDeleted = options.onDeleted
  }

  async handle(request: PushRequest): Promise<PushAnswer> {
    try {
      return await this.#receive(request)
    } catch (error) {
      if (error instanceof Refusal) {
        this.#logger.warn({ code: error.responseCode, reason: error.message }, 'push refused')
        return answer(error.responseCode, error.message)
      }
      this.#logger.error({ error: messageOf(error) }, 'push failed')
      return answer(ResponseCode.INTERNAL_ERROR, catalogueEntry(ResponseCode.INTERNAL_ERROR).defaultMessage)
    }
  }

  async serveNode(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (request.method !== 'POST') return send(response, answer(ResponseCode.INVALID_REQUEST, 'use POST'))
    if (!isJsonContentType(request.headers['content-type'])) {
      return send(
        response,
        answer(ResponseCode.UNSUPPORTED_MEDIA_TYPE, 'Content-Type must be application/json'),
      )
    }
    const tooLarge = () =>
      answer(ResponseCode.PAYLOAD_TOO_LARGE, `the body is over ${this.bodyLimitBytes} bytes`)
    const declared = Number(request.headers['content-length'])
    if (declared > this.bodyLimitBytes) return send(response, tooLarge(), true)
    const body = await readBody(request, this.bodyLimitBytes)
    if (body === undefined) return send(response, tooLarge(), true)
    send(response, await this.handle({ body, headers: request.headers }))
  }

  async #receive({ body, headers }: PushRequest): Promise<PushAnswer> {
    if (!isJsonContentType(headers['content-type'])) {
      throw new Refusal(ResponseCode.UNSUPPORTED_MEDIA_TYPE, 'Content-Type must be application/json')
    }
    const size = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength
    if (size > this.bodyLimitBytes) {
      throw new Refusal(ResponseCode.PAYLOAD_TOO_LARGE, `the body is over ${this.bodyLimitBytes} bytes`)
    }
    const text =
      typeof body === 'string' ? body : Buffer.from(body.buffer, body.byteOffset, size).toString('utf8')
    const { envelope, event } = openPush(text, this.#keys)
    const check = isCheckPush(headerOf(headers, CHECK_HEADER), event.audioId)
    const nonceKey = `${envelope.keyVersion}:${envelope.nonce}`
    if (this.#nonces.has(nonceKey))
      throw new Refusal(ResponseCode.REPLAYED, 'this envelope nonce was already used')
    this.#nonces.add(nonceKey)
    try {
      const admission = await this.#outbox.admit(envelope)
      if (admission === 'replayed')
        throw new Refusal(ResponseCode.REPLAYED, 'this envelope nonce was already used')
      return await this.#receiveAdmitted(event, admission === 'duplicate', check)
    } finally {
      this.#nonces.delete(nonceKey)
    }
  }

  /** An envelope whose nonce was taken: a new event stored (once, however often it arrives at once). */
  async #receiveAdmitted(event: Received, known: boolean, check: boolean): Promise<PushAnswer> {
    const wake = () => this.#outbox.wake(event.eventId)
    if (known) return this.#duplicate(event, wake)
    for (;;) {
      const earlier = this.#events.get(event.eventId)
      if (!earlier) break
      // The platform pushed again while we were still on the first push (it timed out waiting).
      if (await earlier) return this.#duplicate(event, wake)
    }
    const storing = this.#store(event, check)
    this.#events.set(event.eventId, storing)
    try {
      if (!(await storing)) {
        return answer(ResponseCode.INTERNAL_ERROR, 'the recording could not be stored; push again later')
      }
    } finally {
      this.#events.delete(event.eventId)
    }
    this.#logger.info(
      { eventId: event.eventId, audioId: event.audioId, eventType: event.eventType },
      'push received',
    )
    return answer(ResponseCode.OK, 'success', wake)
  }

  #duplicate(event: Received, wake: () => void): PushAnswer {
    this.#logger.info({ eventId: event.eventId, audioId: event.audioId }, 'push repeated; already received')
    return answer(ResponseCode.OK, 'success (already received)', wake)
  }

  /**
   * onRecording or onDeleted, then the receipt; false (nothing recorded) when it throws. A receiver check's
   * push is recorded with its callback, as the check expects, but handed to neither.
   */
  async #store(event: Received, check: boolean): Promise<boolean> {
    const ids = { eventId: event.eventId, audioId: event.audioId }
    try {
      if (check) this.#logger.info(ids, 'receiver check push; answered without storing it')
      else if (event.eventType !== PushEventType.DELETED) await this.#onRecording(event)
      else if (this.#onDeleted) await this.#onDeleted(event)
      else {
        this.#logger.error(ids, 'a recording was deleted but the receiver has no onDeleted; answering 5000')
        return false
      }
    } catch (error) {
      const handler = event.eventType === PushEventType.DELETED ? 'onDeleted' : 'onRecording'
      this.#logger.error(
        { ...ids, error: messageOf(error) },
        `${handler} failed; answering 5000 so that the platform pushes again`,
      )
      return false
    }
    await this.#outbox.recordReceived({
      eventId: event.eventId,
      eventType: event.eventType,
      audioId: event.audioId,
      // onDeleted resolved: the recording is gone from the store, and its callback confirms the erasure.
      erased: event.eventType === PushEventType.DELETED && !check,
    })
    return true
  }
}

/** The body, or undefined once it is over the limit (the rest is then not read). */
function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        request.off('data', onData)
        request.pause()
        resolve(undefined)
      } else chunks.push(chunk)
    }
    request.on('data', onData)
    request.once('end', () => resolve(Buffer.concat(chunks, size)))
    request.once('error', reject)
    request.once('close', () => {
      if (!request.complete) reject(new Error('the client went away'))
    })
  })
}

function send(response: ServerResponse, pushAnswer: PushAnswer, closeConnection = false): void {
  if (response.headersSent || response.destroyed) return
  const body = JSON.stringify(pushAnswer.body)
  response.writeHead(pushAnswer.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    ...(closeConnection && { connection: 'close' }),
  })
  response.once('finish', pushAnswer.afterResponse)
  response.end(body)
}

/** A header's value, its name matched in any case (a PushRequest's headers may come from any transport). */
function headerOf(headers: PushRequest['headers'], name: string): string | string[] | undefined {
  const exact = headers[name]
  if (exact !== undefined) return exact
  const key = Object.keys(headers).find((each) => each.toLowerCase() === name)
  return key === undefined ? undefined : headers[key]
}

/** application/json, any case, parameters (charset) allowed. */
function isJsonContentType(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header[0] : header
  if (typeof value !== 'string') return false
  const type = value.split(';', 1)[0]?.trim().toLowerCase()
  return type === 'application/json'
}
