import assert from 'node:assert/strict'
import { createCipheriv, randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import {
  type Envelope,
  type EnvelopeKey,
  type JsonObject,
  open,
  parseInstantMicros,
  seal,
} from '@earshot/protocol'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import {
  adminCall,
  adminRefusal,
  createPartner,
  expectCode,
  ingest,
  postJson,
  type TestPartner,
} from '@earshot/test-kit/calls'

/** POST /openapi/v1/audios: filters, paging, order, field sets and the sealed response. */

const SET_A_KEYS = [
  'deviceUid',
  'durationMs',
  'recordedAt',
  'title',
  'transcriptId',
  'transcriptSentences',
  'transcriptText',
  'wordsCount',
]
const SET_B_KEYS = ['denoiseUrl', 'deviceUid', 'recordDuration', 'recordedAt', 'title']

/** recordedAt as partners get it: in UTC, to the millisecond, or the microsecond when it has one. */
function inUtc(text: string): string {
  const micros = parseInstantMicros(text) as bigint
  const iso = new Date(Number(micros / 1000n)).toISOString()
  const extra = micros % 1000n
  return extra === 0n ? iso : iso.replace('Z', `${String(extra).padStart(3, '0')}Z`)
}

const sentences = [
  { text: 'hello', beginTime: 0, endTime: 900 },
  { text: 'world', beginTime: 900, endTime: 2100 },
]

interface Seed {
  audioId: string
  deviceUid: string
  recordedAt: string
  audio: boolean
  transcript: boolean
}

/** Hand-picked recordings: equal instants (also written with another offset) and microsecond neighbours. */
const handSeeds: Seed[] = [
  { audioId: 'q01', deviceUid: 'dev-a', recordedAt: '2026-03-01T10:00:00Z', audio: true, transcript: false },
  { audioId: 'q02', deviceUid: 'dev-a', recordedAt: '2026-03-01T10:00:00Z', audio: true, transcript: false },
  // The same instant as q01 and q02, written with +08:00.
  {
    audioId: 'q03',
    deviceUid: 'dev-b',
    recordedAt: '2026-03-01T18:00:00+08:00',
    audio: false,
    transcript: true,
  },
  { audioId: 'q04', deviceUid: 'dev-b', recordedAt: '2026-03-02T00:00:00Z', audio: true, transcript: true },
  // Audio only at first; its transcript is attached by a test.
  {
    audioId: 'q05',
    deviceUid: 'dev-c',
    recordedAt: '2026-02-28T23:59:59.999Z',
    audio: true,
    transcript: false,
  },
  {
    audioId: 'q06',
    deviceUid: 'dev-c',
    recordedAt: '2026-03-01T09:59:59.999999Z',
    audio: true,
    transcript: false,
  },
  {
    audioId: 'q07',
    deviceUid: 'dev-a',
    recordedAt: '2026-03-01T10:00:00.000001Z',
    audio: true,
    transcript: false,
  },
]

/** 24 more through the JSON Lines import: four devices, pairs of equal recordedAt, both field sets. */
const bulkSeeds: Seed[] = Array.from({ length: 24 }, (_, i) => ({
  audioId: `b${String(i).padStart(2, '0')}`,
  deviceUid: `dev-${'abcd'[i % 4]}`,
  recordedAt: `2026-01-${String(1 + Math.floor(i / 2)).padStart(2, '0')}T12:00:00+01:00`,
  audio: i % 3 !== 0,
  transcript: i % 3 !== 1,
}))

const allSeeds = [...handSeeds, ...bulkSeeds]
const TOTAL = allSeeds.length

function transcriptOf(seed: Seed, transcriptId = 1000 + allSeeds.indexOf(seed)) {
  return {
    transcriptId,
    transcriptText: `transcript of ${seed.audioId}`,
    sentences,
    durationMs: 2100,
    wordsCount: 2,
  }
}

function recordingOf(seed: Seed): JsonObject {
  return {
    audioId: seed.audioId,
    deviceUid: seed.deviceUid,
    title: `title of ${seed.audioId}`,
    recordedAt: seed.recordedAt,
    ...(seed.audio && { denoiseUrl: `https://cdn.example/${seed.audioId}.mp3`, recordDuration: 61_000 }),
    ...(seed.transcript && { transcript: transcriptOf(seed) }),
  }
}

/** Epoch microseconds of an ISO instant, keeping the digits Date.parse drops. */
function micros(text: string): bigint {
  const fraction = /\.(\d+)/.exec(text)?.[1] ?? ''
  const whole = Date.parse(text.replace(/\.\d+/, ''))
  return BigInt(whole) * 1000n + BigInt(fraction.padEnd(6, '0').slice(0, 6))
}

/** Newest first: recordedAt desc, then audioId desc. */
function expectedOrder(seeds: Seed[]): string[] {
  return [...seeds]
    .sort((x, y) => {
      const dx = micros(x.recordedAt)
      const dy = micros(y.recordedAt)
      if (dx !== dy) return dx > dy ? -1 : 1
      return x.audioId > y.audioId ? -1 : x.audioId < y.audioId ? 1 : 0
    })
    .map((seed) => seed.audioId)
}

/** Seals a plaintext written as JSON text, so that its numbers reach the platform exactly as written. */
function sealText(key: EnvelopeKey, keyVersion: number, text: string): Envelope {
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 })
  const ciphertext = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
  return {
    specVersion: '1',
    alg: 'A256GCM',
    keyVersion,
    eventId: `query-text-${nonce.toString('hex')}`,
    nonce: nonce.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  }
}

interface Item {
  audioId: string
  data: Record<string, unknown>
}
interface List {
  specVersion: string
  page: number
  size: number
  total: number
  items: Item[]
}

for (const backend of testBackends) {
  describe(`POST /openapi/v1/audios (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner
    let token: string

    async function query(filter: JsonObject): Promise<List> {
      const reply = await partner.call('/openapi/v1/audios', filter, token)
      expectCode(reply, 2000)
      const list = reply.plaintext as unknown as List
      assert.equal(list.specVersion, '1')
      return list
    }

    async function refused(filter: JsonObject, field: string): Promise<string> {
      const reply = await partner.call('/openapi/v1/audios', filter, token)
      expectCode(reply, 4001)
      assert.equal(reply.body.data, undefined)
      assert.ok(reply.body.msg?.includes(field), `msg ${JSON.stringify(reply.body.msg)} names ${field}`)
      return reply.body.msg as string
    }

    const ids = (list: List) => list.items.map((item) => item.audioId)

    before(async () => {
      platform = await startTestPlatform(backend)
      partner = await createPartner(platform, 'Query Co')
      for (const seed of handSeeds) await ingest(platform, partner.enterpriseId, recordingOf(seed))
      const response = await fetch(
        `${platform.adminUrl}/admin/v1/enterprises/${partner.enterpriseId}/recordings/import`,
        {
          method: 'POST',
          headers: {
            authorization: `Bearer ${platform.adminToken}`,
            'content-type': 'application/x-ndjson',
          },
          body: `${bulkSeeds.map((seed) => JSON.stringify(recordingOf(seed))).join('\n')}\n`,
        },
      )
      const lines = (await response.text()).trim().split('\n')
      assert.equal(response.status, 200)
      assert.deepEqual(JSON.parse(lines.at(-1) as string), { imported: bulkSeeds.length, skipped: 0 })
      // Another enterprise's recording, with a device UID and an instant the first one also has.
      const other = await createPartner(platform, 'Other Co')
      await ingest(platform, other.enterpriseId, {
        audioId: 'zz-other',
        deviceUid: 'dev-a',
        title: 'not yours',
        recordedAt: '2026-03-01T10:00:00Z',
        denoiseUrl: 'https://cdn.example/other.mp3',
        recordDuration: 5,
      })
      token = await partner.token()
    })

    after(async () => {
      await platform?.stop()
    })

    test('an empty filter gives page 1 of size 20, newest first, with the total of all rows', async () => {
      const list = await query({})
      assert.equal(list.page, 1)
      assert.equal(list.size, 20)
      assert.equal(list.total, TOTAL)
      assert.deepEqual(ids(list), expectedOrder(allSeeds).slice(0, 20))
    })

    test('equal recordedAt values (whatever their offset) are ordered by audioId desc', async () => {
      const list = await query({ startTime: '2026-03-01T10:00:00Z', endTime: '2026-03-01T10:00:00.000001Z' })
      assert.deepEqual(ids(list), ['q03', 'q02', 'q01'])
      const bulk = await query({ startTime: '2026-01-01T11:00:00Z', endTime: '2026-01-02T11:00:00Z' })
      assert.deepEqual(ids(bulk), ['b01', 'b00'])
    })

    test('filter by audioId', async () => {
      const list = await query({ audioId: 'q04' })
      assert.equal(list.total, 1)
      assert.deepEqual(ids(list), ['q04'])
      const none = await query({ audioId: 'does-not-exist' })
      assert.equal(none.total, 0)
      assert.deepEqual(none.items, [])
    })

    test('filter by deviceUid', async () => {
      for (const device of ['dev-a', 'dev-b', 'dev-c', 'dev-d']) {
        const expected = expectedOrder(allSeeds.filter((seed) => seed.deviceUid === device))
        const list = await query({ deviceUid: device, size: 100 })
        assert.equal(list.total, expected.length)
        assert.deepEqual(ids(list), expected)
        assert.ok(list.items.every((item) => item.data.deviceUid === device))
      }
      assert.equal((await query({ deviceUid: 'dev-none' })).total, 0)
    })

    test('startTime is inclusive: a recording exactly at startTime is included (same instant, +08:00)', async () => {
      const start = '2026-03-01T18:00:00+08:00'
      const expected = expectedOrder(allSeeds.filter((seed) => micros(seed.recordedAt) >= micros(start)))
      assert.deepEqual(expected, ['q04', 'q07', 'q03', 'q02', 'q01'])
      const list = await query({ startTime: start })
      assert.equal(list.total, 5)
      assert.deepEqual(ids(list), expected)
    })

    test('endTime is exclusive: a recording exactly at endTime is excluded', async () => {
      const end = '2026-03-01T10:00:00Z'
      const expected = expectedOrder(allSeeds.filter((seed) => micros(seed.recordedAt) < micros(end)))
      const list = await query({ endTime: end, size: 100 })
      assert.equal(list.total, TOTAL - 5)
      assert.deepEqual(ids(list), expected)
      assert.equal(ids(list)[0], 'q06')
      // The same instant written with a negative offset excludes the same rows.
      assert.deepEqual(ids(await query({ endTime: '2026-03-01T05:30:00-04:30', size: 100 })), expected)
    })

    test('startTime and endTime together match startTime <= recordedAt < endTime to the microsecond', async () => {
      const list = await query({
        startTime: '2026-03-01T18:00:00+08:00',
        endTime: '2026-03-01T18:00:00.000001+08:00',
      })
      assert.equal(list.total, 3)
      assert.deepEqual(ids(list), ['q03', 'q02', 'q01'])
      const before = await query({
        startTime: '2026-03-01T09:59:59.999999Z',
        endTime: '2026-03-01T10:00:00Z',
      })
      assert.deepEqual(ids(before), ['q06'])
      const equal = await query({ startTime: '2026-03-01T10:00:00Z', endTime: '2026-03-01T10:00:00Z' })
      assert.equal(equal.total, 0)
      assert.deepEqual(equal.items, [])
    })

    test('filters combine', async () => {
      const deviceAndTime = await query({ deviceUid: 'dev-a', startTime: '2026-03-01T10:00:00Z' })
      assert.deepEqual(ids(deviceAndTime), ['q07', 'q02', 'q01'])
      const all = await query({
        audioId: 'q03',
        deviceUid: 'dev-b',
        startTime: '2026-03-01T00:00:00Z',
        endTime: '2026-03-02T00:00:00Z',
      })
      assert.deepEqual(ids(all), ['q03'])
      assert.equal((await query({ audioId: 'q03', deviceUid: 'dev-a' })).total, 0)
      assert.equal((await query({ audioId: 'q04', endTime: '2026-03-02T00:00:00Z' })).total, 0)
      const january = expectedOrder(
        bulkSeeds.filter((seed) => seed.deviceUid === 'dev-b' && seed.recordedAt < '2026-01-07'),
      )
      const list = await query({
        deviceUid: 'dev-b',
        startTime: '2026-01-01T00:00:00+01:00',
        endTime: '2026-01-07T00:00:00+01:00',
      })
      assert.equal(list.total, january.length)
      assert.deepEqual(ids(list), january)
    })

    test('size 100 is accepted; size 0 and 101 are refused with 4001 naming size', async () => {
      const list = await query({ size: 100 })
      assert.equal(list.size, 100)
      assert.equal(list.total, TOTAL)
      assert.equal(list.items.length, TOTAL)
      await refused({ size: 0 }, 'size')
      await refused({ size: 101 }, 'size')
      await refused({ size: '20' }, 'size')
      await refused({ size: 2.5 }, 'size')
      await refused({ page: 0 }, 'page')
      await refused({ page: -1 }, 'page')
    })

    test('a page past the end has no items and the true total', async () => {
      const second = await query({ page: 2 })
      assert.equal(second.page, 2)
      assert.deepEqual(ids(second), expectedOrder(allSeeds).slice(20))
      const past = await query({ page: 3 })
      assert.equal(past.page, 3)
      assert.equal(past.size, 20)
      assert.equal(past.total, TOTAL)
      assert.deepEqual(past.items, [])
      const far = await query({ page: 1000, size: 100, deviceUid: 'dev-b' })
      assert.equal(far.total, allSeeds.filter((seed) => seed.deviceUid === 'dev-b').length)
      assert.deepEqual(far.items, [])
    })

    test('walking every page with a small size yields each recording once, in one stable order', async () => {
      const big = ids(await query({ size: 100 }))
      const walked: string[] = []
      for (let page = 1; ; page++) {
        const list = await query({ page, size: 7 })
        assert.equal(list.total, TOTAL)
        if (list.items.length === 0) break
        assert.ok(list.items.length <= 7)
        walked.push(...ids(list))
      }
      assert.equal(walked.length, TOTAL)
      assert.equal(new Set(walked).size, TOTAL)
      assert.deepEqual(walked, big)
      assert.deepEqual(big, expectedOrder(allSeeds))
    })

    test('a time without an offset is refused with 4001 naming the field', async () => {
      await refused({ startTime: '2026-03-01T10:00:00' }, 'startTime')
      await refused({ endTime: '2026-03-01T10:00:00.000' }, 'endTime')
      await refused({ startTime: '2026-03-01' }, 'startTime')
      await refused({ startTime: '2026-02-30T10:00:00Z' }, 'startTime')
      await refused({ endTime: 1_772_359_200_000 }, 'endTime')
    })

    test('a time the database cannot hold is refused with 4001, not an internal error', async () => {
      await refused({ startTime: '2026-03-01T10:00:00+20:00' }, 'startTime')
      await refused({ endTime: '0000-01-01T00:00:00Z' }, 'endTime')
      // The largest offset PostgreSQL holds still works.
      assert.equal((await query({ startTime: '2026-03-02T15:59:00+15:59' })).total, 1)
    })

    test('startTime after endTime is refused with 4001', async () => {
      await refused({ startTime: '2026-03-01T10:00:00.001Z', endTime: '2026-03-01T10:00:00Z' }, 'startTime')
      await refused({ startTime: '2026-03-01T18:00:01+08:00', endTime: '2026-03-01T10:00:00Z' }, 'startTime')
      // The same instant with different offsets is not "after".
      assert.equal(
        (await query({ startTime: '2026-03-01T18:00:00+08:00', endTime: '2026-03-01T10:00:00Z' })).total,
        0,
      )
    })

    /** A filter sent as raw JSON text (1e300 stays 1e300), refused with 4001 naming the field. */
    async function refusedText(text: string, field: string): Promise<string> {
      const envelope = sealText(partner.key, partner.keyVersion, text)
      const reply = await postJson(platform, '/openapi/v1/audios', envelope, token)
      expectCode(reply, 4001)
      assert.equal(reply.body.data, undefined)
      assert.ok(
        reply.body.msg?.startsWith(`${field}: `),
        `msg ${JSON.stringify(reply.body.msg)} names ${field}`,
      )
      return reply.body.msg as string
    }

    test('page and size are integers up to 2^31 − 1: beyond, 4001 naming the field, never echoed', async () => {
      const last = await query({ page: 2 ** 31 - 1, size: 100 })
      assert.equal(last.page, 2 ** 31 - 1)
      assert.equal(last.total, TOTAL)
      assert.deepEqual(last.items, [])
      for (const number of ['2147483648', '1e300', '9223372036854775808', '1e400']) {
        const page = await refusedText(`{"page":${number}}`, 'page')
        if (number !== '1e400') assert.match(page, /^page: must be <= 2147483647$/)
        await refusedText(`{"size":${number}}`, 'size')
        await refusedText(`{"page":2,"size":${number}}`, 'size')
      }
    })

    test('a time with more than 6 fractional digits is refused with 4001 naming the field, not rounded', async () => {
      // PostgreSQL would round .0000005 to q07's instant (.000001) and .9999995 to 10:00:00.
      for (const [field, text] of [
        ['endTime', '2026-03-01T10:00:00.0000005Z'],
        ['startTime', '2026-03-01T09:59:59.9999995Z'],
        ['startTime', '2026-03-01T18:00:00.000000001+08:00'],
      ] as const) {
        const msg = await refused({ [field]: text }, field)
        assert.match(msg, /at most 6 fractional digits/)
      }
      // With 6 digits a bound falls exactly on q07 (10:00:00.000001Z).
      assert.deepEqual(ids(await query({ startTime: '2026-03-01T10:00:00.000001Z' })), ['q04', 'q07'])
      const before = await query({ endTime: '2026-03-01T10:00:00.000001Z', size: 100 })
      assert.equal(before.total, TOTAL - 2)
      assert.deepEqual(ids(before).slice(0, 4), ['q03', 'q02', 'q01', 'q06'])
    })

    test('startTime 1 µs after endTime is refused with 4001; 0.8 µs after cannot even be written', async () => {
      const after = await refused(
        { startTime: '2026-03-01T10:00:00.000001Z', endTime: '2026-03-01T10:00:00Z' },
        'startTime',
      )
      assert.match(after, /^startTime: must not be after endTime$/)
      const finer = await refused(
        { startTime: '2026-03-01T10:00:00.0000008Z', endTime: '2026-03-01T10:00:00Z' },
        'startTime',
      )
      assert.match(finer, /at most 6 fractional digits/)
    })

    test('recordedAt with more than 6 fractional digits is refused with 4001; 6 are kept exactly', async () => {
      const precise = await createPartner(platform, 'Precise Co')
      const base = {
        deviceUid: 'dev-p',
        title: 'precise',
        denoiseUrl: 'https://cdn.example/p.mp3',
        recordDuration: 1,
      }
      for (const recordedAt of ['2026-03-01T10:00:00.9999995Z', '2026-03-01T18:00:00.1234567+08:00']) {
        const refusal = await adminRefusal(platform, 'ingestRecording', {
          params: { enterpriseId: precise.enterpriseId },
          body: { ...base, recordedAt },
        })
        assert.equal(refusal.status, 400)
        assert.equal(refusal.code, 4001)
        assert.match(refusal.msg, /^recordedAt: .*at most 6 fractional digits/)
      }
      await ingest(platform, precise.enterpriseId, {
        ...base,
        audioId: 'q-precise',
        recordedAt: '2026-03-01T10:00:00.999999Z',
      })
      const preciseToken = await precise.token()
      const count = async (filter: JsonObject) => {
        const reply = await precise.call('/openapi/v1/audios', filter, preciseToken)
        expectCode(reply, 2000)
        return (reply.plaintext as unknown as List).total
      }
      assert.equal(await count({}), 1)
      assert.equal(await count({ startTime: '2026-03-01T10:00:00.999999Z' }), 1)
      assert.equal(await count({ startTime: '2026-03-01T10:00:01Z' }), 0)
      assert.equal(await count({ endTime: '2026-03-01T10:00:00.999999Z' }), 0)
      assert.equal(await count({ endTime: '2026-03-01T18:00:01+08:00' }), 1)
    })

    test('an unknown field is refused with 4001 naming it', async () => {
      await refused({ pageSize: 10 }, 'pageSize')
      await refused({ deviceUid: 'dev-a', enterpriseId: 1 }, 'enterpriseId')
      await refused({ audioId: 7 }, 'audioId')
      await refused({ deviceUid: '' }, 'deviceUid')
      // PostgreSQL text cannot hold U+0000: refused, not an internal error.
      await refused({ deviceUid: 'dev\u0000a' }, 'deviceUid')
      await refused({ audioId: 'q01\u0000' }, 'audioId')
    })

    test('set A and set B have exactly their keys, with the types as they appear', async () => {
      const items = new Map((await query({ size: 100 })).items.map((item) => [item.audioId, item.data]))
      for (const seed of allSeeds) {
        const data = items.get(seed.audioId)
        assert.ok(data, seed.audioId)
        assert.equal(data.deviceUid, seed.deviceUid)
        assert.equal(data.title, `title of ${seed.audioId}`)
        assert.equal(data.recordedAt, inUtc(seed.recordedAt), seed.audioId)
        if (seed.transcript) {
          // Set A, with the audio part too when the recording has one.
          const keys = seed.audio ? [...SET_A_KEYS, 'denoiseUrl', 'recordDuration'].sort() : SET_A_KEYS
          assert.deepEqual(Object.keys(data).sort(), keys, seed.audioId)
          if (seed.audio) assert.equal(data.denoiseUrl, `https://cdn.example/${seed.audioId}.mp3`)
          const transcript = transcriptOf(seed)
          assert.equal(data.transcriptId, transcript.transcriptId)
          assert.equal(data.transcriptText, transcript.transcriptText)
          assert.equal(typeof data.transcriptSentences, 'string')
          assert.deepEqual(JSON.parse(data.transcriptSentences as string), sentences)
          assert.equal(data.durationMs, 2100)
          assert.equal(data.wordsCount, 2)
          for (const key of ['transcriptId', 'durationMs', 'wordsCount']) {
            assert.ok(Number.isInteger(data[key]), `${seed.audioId}.${key} is an integer`)
          }
        } else {
          assert.deepEqual(Object.keys(data).sort(), SET_B_KEYS, seed.audioId)
          assert.equal(data.denoiseUrl, `https://cdn.example/${seed.audioId}.mp3`)
          assert.equal(data.recordDuration, 61_000)
          assert.ok(Number.isInteger(data.recordDuration))
        }
      }
    })

    test('attaching a transcript later switches the recording to set A, which keeps its audio part', async () => {
      const [beforeItem] = (await query({ audioId: 'q05' })).items
      assert.deepEqual(Object.keys(beforeItem?.data ?? {}).sort(), SET_B_KEYS)

      const big = Number.MAX_SAFE_INTEGER
      const attached = await adminCall(platform, 'attachTranscript', {
        params: { enterpriseId: partner.enterpriseId, audioId: 'q05' },
        body: { transcriptId: big, transcriptText: 'late', sentences, durationMs: 2100, wordsCount: 1 },
      })
      assert.deepEqual(attached, { audioId: 'q05' })

      const list = await query({ audioId: 'q05' })
      assert.equal(list.total, 1)
      assert.deepEqual(list.items[0], {
        audioId: 'q05',
        data: {
          deviceUid: 'dev-c',
          title: 'title of q05',
          recordedAt: '2026-02-28T23:59:59.999Z',
          transcriptId: big,
          transcriptText: 'late',
          transcriptSentences: JSON.stringify(sentences),
          durationMs: 2100,
          wordsCount: 1,
          denoiseUrl: 'https://cdn.example/q05.mp3',
          recordDuration: 61_000,
        },
      })
      // The recording keeps its place and the total is unchanged.
      assert.deepEqual(ids(await query({ size: 100 })), expectedOrder(allSeeds))
    })

    test("another enterprise's recordings never appear", async () => {
      assert.equal((await query({ audioId: 'zz-other' })).total, 0)
      const list = await query({ deviceUid: 'dev-a', size: 100 })
      assert.ok(!ids(list).includes('zz-other'))
      assert.equal(list.total, allSeeds.filter((seed) => seed.deviceUid === 'dev-a').length)
    })

    test("the response data is sealed under the request's keyVersion and echoes its eventId", async () => {
      const envelope = seal(partner.key, partner.keyVersion, 'query-echo-7f3a', { audioId: 'q01' })
      const reply = await postJson(platform, '/openapi/v1/audios', envelope, token)
      expectCode(reply, 2000)
      assert.equal(reply.body.msg, 'success')
      const data = reply.body.data as Record<string, unknown>
      assert.deepEqual(Object.keys(data).sort(), [
        'alg',
        'ciphertext',
        'eventId',
        'keyVersion',
        'nonce',
        'specVersion',
        'tag',
      ])
      assert.equal(data.eventId, 'query-echo-7f3a')
      assert.equal(data.keyVersion, partner.keyVersion)
      assert.equal(data.specVersion, '1')
      assert.equal(data.alg, 'A256GCM')
      assert.notEqual(data.nonce, envelope.nonce)
      const opened = open(data, partner.key).plaintext as unknown as List
      assert.equal(opened.total, 1)
      assert.deepEqual(ids(opened), ['q01'])
    })
  })
}
