import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, afterEach, before, describe, test } from 'node:test'
import { type Envelope, generateSecret, loadKey, type PushEvent, seal } from '@earshot/protocol'
import { eventually } from '@earshot/test-kit/eventually'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import Fastify from 'fastify'
import { EarshotConfigError } from '../client/errors.js'
import { silentLogger } from '../logging/receiver-logger.js'
import { type CallbackOutbox, openCallbackOutbox } from '../outbox/callback-outbox.js'
import type { Database } from '../storage/database.js'
import type { PushAnswer } from './push-exchange.js'
import {
  createPushReceiver,
  type PushReceiver,
  type ReceivedDeletion,
  type ReceivedPush,
} from './push-receiver.js'

const secret = generateSecret()
const key = loadKey(secret)
const otherSecret = generateSecret()
const json = { 'content-type': 'application/json' }

let counter = 0
type RecordingEvent = Omit<ReceivedPush, 'sentences'>

function pushEvent(overrides: Partial<RecordingEvent> = {}): RecordingEvent {
  const n = ++counter
  return {
    eventId: `evt-${n}`,
    eventType: 'recording.audio_ready',
    audioId: `audio-${n}`,
    occurredAt: '2026-03-01T10:00:00.000Z',
    data: {
      deviceUid: 'DEV-1',
      title: `t${n}`,
      recordedAt: '2026-03-01T09:00:00.000Z',
      denoiseUrl: `https://media.example/${n}.mp3`,
      recordDuration: 61,
    },
    ...overrides,
  }
}
function deletionEvent(audioId: string): ReceivedDeletion {
  return {
    eventId: `evt-${++counter}`,
    eventType: 'recording.deleted',
    audioId,
    occurredAt: '2026-03-02T10:00:00.000Z',
    data: {},
  }
}

const sealed = (event: PushEvent, withSecret = secret, keyVersion = 1): Envelope =>
  seal(loadKey(withSecret), keyVersion, event.eventId, event as never)
const body = (envelope: unknown) => JSON.stringify(envelope)

describe('push receiver', { timeout: 120_000 }, () => {
  let shared: Database
  let outbox: CallbackOutbox
  let receiver: PushReceiver
  let stored: ReceivedPush[]
  let deleted: ReceivedDeletion[]
  /** Counts the events whose order a test compares (a confirm call, an answer sent). */
  let step = 0
  /** When each confirm call was made (its step), by audioId. */
  let confirmedAt: Map<string, number>
  /** Every confirm call in order: the audioId, with " failed" when it was made to fail. */
  let confirmCalls: string[]
  /** The audioIds of the confirm calls with erased: true (erasure confirmations), in order. */
  let erasedCalls: string[]
  /** AudioIds whose next confirm fails. */
  let failConfirm: Set<string>
  let failNextStore: boolean

  before(async () => {
    shared = await emptyPglite()
  })
  after(async () => {
    await shared.close()
  })

  /** A fresh outbox (emptied tables) and receiver for each test. */
  async function setUp(
    extra: { keyVersion?: number; keys?: Record<number, string>; withoutOnDeleted?: boolean } = {},
  ) {
    // (earshot_received_events is a view of the callbacks.) The first time, the outbox has not made the tables yet.
    await shared
      .query('TRUNCATE earshot_receipt_callbacks, earshot_seen_nonces, earshot_receipt_callback_attempts')
      .catch((error: unknown) => {
        // Before the first outbox made the tables there is nothing to empty; anything else is a bug.
        if ((error as { code?: string }).code !== '42P01') throw error
      })
    stored = []
    deleted = []
    confirmedAt = new Map()
    confirmCalls = []
    erasedCalls = []
    failConfirm = new Set()
    failNextStore = false
    outbox = await openCallbackOutbox({
      database: shared,
      confirm: async (audioId, { erased }) => {
        if (erased) erasedCalls.push(audioId)
        if (failConfirm.delete(audioId)) {
          confirmCalls.push(`${audioId} failed`)
          throw new Error('the platform is restarting')
        }
        confirmCalls.push(audioId)
        confirmedAt.set(audioId, ++step)
      },
      retrySchedule: [20],
      pollIntervalMs: 50,
      log: silentLogger,
    })
    const common = {
      outbox,
      log: silentLogger,
      bodyLimitBytes: 64 * 1024,
      onRecording: async (event: ReceivedPush) => {
        if (failNextStore) {
          failNextStore = false
          throw new Error('disk full')
        }
        stored.push(event)
      },
      onDeleted: extra.withoutOnDeleted
        ? undefined
        : async (event: ReceivedDeletion) => {
            if (failNextStore) {
              failNextStore = false
              throw new Error('disk full')
            }
            deleted.push(event)
          },
    }
    receiver = extra.keys
      ? createPushReceiver({ ...common, keys: extra.keys })
      : createPushReceiver({ ...common, secret, keyVersion: extra.keyVersion })
  }
  afterEach(async () => {
    await outbox.close()
  })

  /**
   * Makes the outbox claim the callbacks due in its database, and waits until it did: a sentinel
   * callback (recorded straight into the outbox, past the receiver) fails once, and its retry is
   * claimed from the database and confirmed. A callback due before it would have been claimed no later.
   * Returns the sentinel's audioId.
   */
  const claimDue = async (): Promise<string> => {
    const sentinel = pushEvent()
    failConfirm.add(sentinel.audioId)
    const { eventId, eventType, audioId } = sentinel
    assert.equal(await outbox.recordReceived({ eventId, eventType, audioId }), true)
    outbox.wake(eventId)
    await eventually(
      async () => (await outbox.callbacks({ audioId }))[0]?.state === 'confirmed',
      10_000,
      'the sentinel callback retried and confirmed',
    )
    assert.deepEqual(confirmCalls.slice(-2), [`${audioId} failed`, audioId])
    return audioId
  }

  /** The answers went out, the outbox then claimed what was due: nothing of these pushes was called back. */
  const nothingRecorded = async (...answers: PushAnswer[]) => {
    assert.deepEqual(stored, [])
    assert.deepEqual(await outbox.callbacks(), [])
    for (const answer of answers) answer.afterResponse()
    const sentinel = await claimDue()
    assert.deepEqual(confirmCalls, [`${sentinel} failed`, sentinel])
  }

  test('a valid push is stored, answered 2000, recorded, and confirmed after the answer', async () => {
    await setUp()
    const event = pushEvent()
    const answer = await receiver.handle({ body: body(sealed(event)), headers: json })
    assert.equal(answer.status, 200)
    assert.deepEqual(answer.body, { code: 2000, msg: 'success' })
    assert.deepEqual(stored, [{ ...event, sentences: undefined }])
    const [callback] = await outbox.callbacks()
    assert.equal(callback?.eventId, event.eventId)
    assert.equal(callback?.audioId, event.audioId)
    assert.equal(callback?.state, 'pending')

    // The outbox claims what is due (a sentinel's retry shows it did): nothing is sent before the answer went out.
    const sentinel = await claimDue()
    assert.deepEqual(confirmCalls, [`${sentinel} failed`, sentinel])
    answer.afterResponse()
    await eventually(
      async () => (await outbox.callbacks({ audioId: event.audioId }))[0]?.state === 'confirmed',
      10_000,
      'confirmed',
    )
    assert.deepEqual(confirmCalls, [`${sentinel} failed`, sentinel, event.audioId])
  })

  test("a receiver check's push (the header and a check_ audioId) is answered and called back, never handed over", async () => {
    await setUp()
    const check = pushEvent({ audioId: 'check_run_valid' })
    const deletion = deletionEvent('check_run_deleted')
    for (const event of [check, deletion]) {
      const answer = await receiver.handle({
        body: body(sealed(event)),
        headers: { ...json, 'X-Earshot-Check': '1' },
      })
      assert.deepEqual(answer.body, { code: 2000, msg: 'success' })
      answer.afterResponse()
    }
    await eventually(
      async () => (await outbox.callbacks({ audioId: check.audioId }))[0]?.state === 'confirmed',
      10_000,
      "the check push's callback confirmed",
    )
    assert.deepEqual([stored, deleted], [[], []])
    // Nothing was removed for the check's deletion: its callback is no erasure confirmation.
    assert.equal((await outbox.callbacks({ audioId: deletion.audioId }))[0]?.erased, false)
    // Either alone is a real push: a header cannot make the receiver skip a recording, nor can a name.
    const named = pushEvent({ audioId: 'check_without_header' })
    const marked = pushEvent()
    const answers = await Promise.all([
      receiver.handle({ body: body(sealed(named)), headers: json }),
      receiver.handle({ body: body(sealed(marked)), headers: { ...json, 'x-earshot-check': '1' } }),
    ])
    assert.deepEqual(
      answers.map((answer) => answer.body.code),
      [2000, 2000],
    )
    assert.deepEqual(stored.map((event) => event.audioId).sort(), [marked.audioId, named.audioId].sort())
  })

  test('a transcript push hands over its sentences parsed', async () => {
    await setUp()
    const sentences = [{ text: 'hello there', beginTime: 0, endTime: 900 }]
    const event = pushEvent({
      eventType: 'recording.transcript_ready',
      data: {
        deviceUid: 'DEV-1',
        title: 'with transcript',
        recordedAt: '2026-03-01T09:00:00.000Z',
        transcriptId: 7,
        transcriptText: 'hello there',
        transcriptSentences: JSON.stringify(sentences),
        durationMs: 900,
        wordsCount: 2,
      },
    })
    const answer = await receiver.handle({ body: body(sealed(event)), headers: json })
    assert.equal(answer.body.code, 2000)
    assert.deepEqual(stored[0]?.sentences, sentences)

    const bad = pushEvent({
      data: { ...(event.data as object), transcriptSentences: '[{"text":1}]' } as never,
    })
    const refused = await receiver.handle({ body: body(sealed(bad)), headers: json })
    assert.equal(refused.body.code, 4001)
    assert.match(refused.body.msg, /^data\.transcriptSentences: /)
  })

  test('recording.updated is accepted, handed to onRecording with its eventType, and confirmed', async () => {
    await setUp()
    const first = pushEvent()
    const updated = pushEvent({
      eventType: 'recording.updated',
      audioId: first.audioId,
      occurredAt: '2026-03-02T10:00:00.000Z',
      data: { ...first.data, title: 'renamed', denoiseUrl: 'https://media.example/replaced.mp3' },
    })
    for (const event of [first, updated]) {
      const answer = await receiver.handle({ body: body(sealed(event)), headers: json })
      assert.deepEqual(answer.body, { code: 2000, msg: 'success' })
      answer.afterResponse()
    }
    assert.deepEqual(
      stored.map((event) => [event.eventType, event.data.title]),
      [
        ['recording.audio_ready', first.data.title],
        ['recording.updated', 'renamed'],
      ],
    )
    assert.deepEqual(stored[1], { ...updated, sentences: undefined })
    await eventually(
      async () =>
        (await outbox.callbacks({ audioId: first.audioId })).every((each) => each.state === 'confirmed'),
      10_000,
      'both confirmed',
    )
    assert.deepEqual(
      (await outbox.callbacks({ audioId: first.audioId })).map((each) => each.eventId).sort(),
      [first.eventId, updated.eventId].sort(),
    )
  })

  test('tampered ciphertext → 4012; nothing stored, recorded or called back', async () => {
    await setUp()
    const envelope = sealed(pushEvent())
    const bytes = Buffer.from(envelope.ciphertext, 'base64')
    bytes[0] = (bytes[0] as number) ^ 1
    const answer = await receiver.handle({
      body: body({ ...envelope, ciphertext: bytes.toString('base64') }),
      headers: json,
    })
    assert.equal(answer.status, 401)
    assert.deepEqual(answer.body, { code: 4012, msg: 'the envelope could not be decrypted' })
    await nothingRecorded(answer)
  })

  test('an envelope sealed with another key, or of a keyVersion not configured → 4012', async () => {
    await setUp({ keyVersion: 2 })
    const otherKey = await receiver.handle({ body: body(sealed(pushEvent(), otherSecret, 2)), headers: json })
    assert.equal(otherKey.body.code, 4012)
    const otherVersion = await receiver.handle({ body: body(sealed(pushEvent(), secret, 1)), headers: json })
    assert.equal(otherVersion.body.code, 4012)
    assert.equal(otherVersion.body.msg, otherKey.body.msg, 'one message for all: it reveals nothing')
    await nothingRecorded(otherKey, otherVersion)
  })

  test('keys by keyVersion: both the old and the new key open pushes during a rotation', async () => {
    await setUp({ keys: { 1: otherSecret, 2: secret } })
    const old = await receiver.handle({ body: body(sealed(pushEvent(), otherSecret, 1)), headers: json })
    const current = await receiver.handle({ body: body(sealed(pushEvent(), secret, 2)), headers: json })
    const unknown = await receiver.handle({ body: body(sealed(pushEvent(), secret, 3)), headers: json })
    assert.deepEqual([old.body.code, current.body.code, unknown.body.code], [2000, 2000, 4012])
    assert.equal(stored.length, 2)
  })

  test('a replayed envelope (the same nonce again) → 4090, not handed over again', async () => {
    await setUp()
    const text = body(sealed(pushEvent()))
    const first = await receiver.handle({ body: text, headers: json })
    first.afterResponse()
    const again = await receiver.handle({ body: text, headers: json })
    assert.equal(first.body.code, 2000)
    assert.equal(again.status, 409)
    assert.equal(again.body.code, 4090)
    assert.equal(stored.length, 1)
    assert.equal((await outbox.callbacks()).length, 1)

    // The same envelope twice at once: one is handled, the other refused.
    const text2 = body(sealed(pushEvent()))
    const both = await Promise.all([
      receiver.handle({ body: text2, headers: json }),
      receiver.handle({ body: text2, headers: json }),
    ])
    assert.deepEqual(both.map((a) => a.body.code).sort(), [2000, 4090])
    assert.equal(stored.length, 2)
  })

  test('a push refused before it was opened does not use up its nonce', async () => {
    await setUp()
    const text = body(sealed(pushEvent()))
    const refused = await receiver.handle({ body: text, headers: { 'content-type': 'text/plain' } })
    assert.equal(refused.body.code, 4150)
    assert.equal((await receiver.handle({ body: text, headers: json })).body.code, 2000)
    assert.equal(stored.length, 1)
  })

  test('a repeated eventId with a fresh nonce is answered 2000 without storing it twice', async () => {
    await setUp()
    const event = pushEvent()
    const first = await receiver.handle({ body: body(sealed(event)), headers: json })
    first.afterResponse()
    // Confirmed and recorded, as before an operator's replay.
    await eventually(
      async () => (await outbox.callbacks({ audioId: event.audioId }))[0]?.state === 'confirmed',
      10_000,
      'first callback recorded',
    )
    assert.ok(confirmedAt.has(event.audioId))
    const again = await receiver.handle({ body: body(sealed(event)), headers: json })
    assert.equal(again.status, 200)
    assert.equal(again.body.code, 2000)
    assert.equal(stored.length, 1)
    const callbacks = await outbox.callbacks()
    assert.equal(callbacks.length, 1)

    // The repeat (an operator's replay, say) gets its callback again, once answered.
    confirmedAt.clear()
    again.afterResponse()
    await eventually(async () => confirmedAt.has(event.audioId), 10_000, 'callback of the repeat')

    // Two pushes of one eventId at once (the platform timed out and pushed again): stored once.
    const twice = pushEvent()
    const answers = await Promise.all([
      receiver.handle({ body: body(sealed(twice)), headers: json }),
      receiver.handle({ body: body(sealed(twice)), headers: json }),
    ])
    assert.deepEqual(
      answers.map((a) => a.body.code),
      [2000, 2000],
    )
    assert.equal(stored.filter((s) => s.eventId === twice.eventId).length, 1)
  })

  test('onRecording throwing → 5000 and nothing recorded; the next push of the event is stored', async () => {
    await setUp()
    const event = pushEvent()
    failNextStore = true
    const failed = await receiver.handle({ body: body(sealed(event)), headers: json })
    assert.equal(failed.status, 500)
    assert.equal(failed.body.code, 5000)
    await nothingRecorded(failed)
    const retried = await receiver.handle({ body: body(sealed(event)), headers: json })
    assert.equal(retried.body.code, 2000)
    assert.equal(stored.length, 1)
  })

  test('a deletion is handed to onDeleted once, answered 2000, and its erasure confirmed after the answer', async () => {
    await setUp()
    const event = deletionEvent('audio-gone')
    failNextStore = true
    const failed = await receiver.handle({ body: body(sealed(event)), headers: json })
    assert.deepEqual([failed.status, failed.body.code], [500, 5000])
    assert.deepEqual(deleted, [])
    assert.deepEqual(await outbox.callbacks(), [])

    const answer = await receiver.handle({ body: body(sealed(event)), headers: json })
    assert.deepEqual(answer.body, { code: 2000, msg: 'success' })
    assert.deepEqual(deleted, [event])
    assert.deepEqual(stored, [])
    answer.afterResponse()
    await eventually(
      async () => (await outbox.callbacks({ audioId: event.audioId }))[0]?.state === 'confirmed',
      10_000,
      'the deletion confirmed',
    )
    const [callback] = await outbox.callbacks({ audioId: event.audioId })
    assert.equal(callback?.eventType, 'recording.deleted')
    assert.equal(callback?.erased, true)
    assert.deepEqual(erasedCalls, [event.audioId])

    // Pushed again (fresh nonce, same eventId): answered, not handed over again.
    const again = await receiver.handle({ body: body(sealed(event)), headers: json })
    assert.equal(again.body.code, 2000)
    assert.deepEqual(deleted, [event])
  })

  test('a deletion without onDeleted is answered 5000 and not recorded; a recording push needs its data', async () => {
    await setUp({ withoutOnDeleted: true })
    const refused = await receiver.handle({ body: body(sealed(deletionEvent('audio-x'))), headers: json })
    assert.deepEqual([refused.status, refused.body.code], [500, 5000])
    // A deletion's data is open to fields a later version adds: still a deletion.
    const withData = { ...deletionEvent('audio-y'), data: { reason: 'operator' } }
    const invalid = await receiver.handle({ body: body(sealed(withData as never)), headers: json })
    assert.equal(invalid.body.code, 5000)
    const recordingWithoutData = pushEvent({ data: {} as never })
    const invalid2 = await receiver.handle({ body: body(sealed(recordingWithoutData)), headers: json })
    assert.equal(invalid2.body.code, 4001)
    await nothingRecorded(refused, invalid, invalid2)
  })

  test('refusals: content type 4150, too large 4130, not JSON 4000, bad envelope 4000, bad field 4001', async () => {
    await setUp()
    const valid = body(sealed(pushEvent()))
    const code = async (text: string, headers: Record<string, string> = json) =>
      (await receiver.handle({ body: text, headers })).body
    assert.equal((await code(valid, {})).code, 4150)
    assert.equal((await code(valid, { 'content-type': 'text/plain' })).code, 4150)
    assert.equal((await code('x'.repeat(64 * 1024 + 1))).code, 4130)
    assert.equal((await code('{"specVersion":')).code, 4000)
    assert.equal((await code('[]')).code, 4000)
    assert.equal((await code(body({ ...sealed(pushEvent()), nonce: 'AAAA' }))).code, 4000)
    // Authentic but not a push: the field is named.
    const noAudio = seal(key, 1, 'evt-x', { eventId: 'evt-x', eventType: 'recording.audio_ready' })
    assert.deepEqual(await code(body(noAudio)), { code: 4001, msg: 'audioId: is required' })
    const badTime = pushEvent({ occurredAt: '2026-03-01T10:00:00' })
    assert.match((await code(body(sealed(badTime)))).msg, /^occurredAt: /)
    const mismatched = seal(key, 1, 'evt-outer', pushEvent({ eventId: 'evt-inner' }) as never)
    assert.deepEqual(await code(body(mismatched)), {
      code: 4001,
      msg: "eventId: must equal the envelope's eventId",
    })
    const nul = pushEvent({ audioId: 'a\u0000b' })
    assert.deepEqual(await code(body(sealed(nul))), {
      code: 4001,
      msg: 'audioId: must not contain the character U+0000',
    })
    assert.equal(
      (await code(valid, { 'content-type': 'Application/JSON; charset=utf-8' })).code,
      2000,
      'parameters and case are fine',
    )
    assert.equal(stored.length, 1)
  })

  test('misconfiguration fails at construction', async () => {
    await setUp()
    const onRecording = async () => {}
    assert.throws(() => createPushReceiver({ outbox, onRecording, secret: 'short' }), EarshotConfigError)
    assert.throws(() => createPushReceiver({ outbox, onRecording, secret, keyVersion: 0 }), /keyVersion/)
    assert.throws(() => createPushReceiver({ outbox, onRecording, keys: {} }), /at least one/)
    assert.throws(() => createPushReceiver({ outbox, onRecording, keys: { 1: 'nope' } }), /keys\[1\]/)
    assert.throws(
      () => createPushReceiver({ outbox, onRecording, secret, keys: { 1: secret } } as never),
      /not both/,
    )
    assert.throws(() => createPushReceiver({ outbox: undefined as never, onRecording, secret }), /outbox/)
    assert.throws(() => createPushReceiver({ outbox, onRecording, secret, bodyLimitBytes: 0 }), /bodyLimit/)
    assert.throws(
      () => createPushReceiver({ outbox, onRecording, secret, onDeleted: 'delete' as never }),
      /onDeleted/,
    )
  })

  describe('over node:http', { timeout: 120_000 }, () => {
    let server: Server
    let url: string
    let finishedAt: Map<string, number>

    const listen = async () => {
      finishedAt = new Map()
      server = createServer((request, response) => {
        const eventId = request.headers['x-earshot-event-id'] as string
        response.once('finish', () => finishedAt.set(eventId, ++step))
        receiver.handler(request, response)
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/earshot/push`
    }
    afterEach(async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    })

    const post = async (text: string | Buffer, headers: Record<string, string> = json) => {
      const response = await fetch(url, { method: 'POST', headers, body: text })
      return { status: response.status, body: (await response.json()) as { code: number; msg: string } }
    }

    test('the callback starts only after the answer was sent (order of events)', async () => {
      await setUp()
      await listen()
      const events = Array.from({ length: 20 }, () => pushEvent())
      const answers = await Promise.all(
        events.map((event) => post(body(sealed(event)), { ...json, 'x-earshot-event-id': event.eventId })),
      )
      assert.ok(answers.every((a) => a.status === 200 && a.body.code === 2000))
      await eventually(async () => confirmedAt.size === events.length, 10_000, 'all confirmed')
      for (const event of events) {
        const finished = finishedAt.get(event.eventId)
        const confirmed = confirmedAt.get(event.audioId)
        assert.ok(finished !== undefined && confirmed !== undefined)
        assert.ok(
          confirmed > finished,
          `${event.eventId}: callback at step ${confirmed}, answer finished at step ${finished}`,
        )
      }
    })

    test('nothing a client sends crashes it: wrong method, big or broken bodies, aborted requests', async () => {
      await setUp()
      await listen()
      assert.equal((await fetch(url)).status, 400)
      assert.deepEqual(await post(Buffer.alloc(200_000, 'a')), {
        status: 413,
        body: { code: 4130, msg: 'the body is over 65536 bytes' },
      })
      // Over the limit without a Content-Length (chunked).
      const chunked = await fetch(url, {
        method: 'POST',
        headers: json,
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < 10; i++) controller.enqueue(new Uint8Array(10_000))
            controller.close()
          },
        }),
        duplex: 'half',
      } as RequestInit)
      assert.equal(chunked.status, 413)
      assert.equal((await post('\u0000\uffff{')).body.code, 4000)
      assert.equal((await post('{"__proto__":{"x":1}}')).body.code, 4000)
      assert.equal((await post('null')).body.code, 4000)
      // A client that goes away mid-body.
      const { request } = await import('node:http')
      await new Promise<void>((resolve) => {
        const req = request(url, { method: 'POST', headers: { ...json, 'content-length': '1000' } })
        req.on('error', () => resolve())
        req.write('{"specVersion":"1"', () => {
          req.destroy()
          resolve()
        })
      })
      assert.equal((await post(body(sealed(pushEvent())))).body.code, 2000, 'still serving')
    })
  })

  test('as a Fastify plugin, in a scope of its own', async () => {
    await setUp()
    const app = Fastify()
    await app.register(receiver.fastifyPlugin, { path: '/hooks/earshot' })
    app.post('/other', async (request) => ({ echoed: request.body }))
    await app.ready()
    try {
      const event = pushEvent()
      const ok = await app.inject({
        method: 'POST',
        url: '/hooks/earshot',
        headers: json,
        payload: body(sealed(event)),
      })
      assert.equal(ok.statusCode, 200)
      assert.deepEqual(ok.json(), { code: 2000, msg: 'success' })
      assert.equal(stored[0]?.eventId, event.eventId)
      await eventually(
        async () => confirmedAt.has(event.audioId),
        10_000,
        'callback after the Fastify answer',
      )

      const text = await app.inject({
        method: 'POST',
        url: '/hooks/earshot',
        headers: { 'content-type': 'text/plain' },
        payload: 'hello',
      })
      assert.deepEqual([text.statusCode, text.json().code], [415, 4150])
      const big = await app.inject({
        method: 'POST',
        url: '/hooks/earshot',
        headers: json,
        payload: 'x'.repeat(70_000),
      })
      assert.deepEqual([big.statusCode, big.json().code], [413, 4130])
      const garbage = await app.inject({ method: 'POST', url: '/hooks/earshot', headers: json, payload: '{' })
      assert.deepEqual([garbage.statusCode, garbage.json().code], [400, 4000])
      // The application's own JSON parsing is untouched.
      const other = await app.inject({ method: 'POST', url: '/other', headers: json, payload: '{"a":1}' })
      assert.deepEqual(other.json(), { echoed: { a: 1 } })
    } finally {
      await app.close()
    }
  })
})
