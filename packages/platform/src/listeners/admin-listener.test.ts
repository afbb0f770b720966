import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin, createPartner, partnerFor, type TestPartner } from '@earshot/test-kit/calls'

/**
 * The operators' API: its guard, enterprises, keys, push URLs and ingest. The JSON
 * Lines import is tested in json-lines-import.test.ts.
 */

interface Refusal {
  code: number
  msg: string
  requestId: string
}

interface Credentials {
  enterpriseId: number
  keyVersion: number
  secret: string
}

interface Summary {
  enterpriseId: number
  name: string
  pushUrl: string | null
  disabled: boolean
  requireIssuedAt: boolean
  createdAt: string
  keys: { keyVersion: number; createdAt: string; retiresAt: string | null }[]
}

function expectRefusal(
  reply: { status: number; body: unknown },
  status: number,
  code: number,
  msgPattern?: RegExp,
): Refusal {
  const body = reply.body as Refusal
  assert.equal(reply.status, status, JSON.stringify(body))
  assert.equal(body.code, code)
  assert.equal(typeof body.msg, 'string')
  assert.equal(typeof body.requestId, 'string')
  if (msgPattern) assert.match(body.msg, msgPattern)
  return body
}

const transcript = {
  transcriptId: 77,
  transcriptText: 'hi',
  sentences: [{ text: 'hi', beginTime: 0, endTime: 400 }],
  durationMs: 400,
  wordsCount: 1,
}

for (const backend of testBackends) {
  describe(`admin API (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let partner: TestPartner

    async function rawAdmin(
      method: string,
      path: string,
      headers: Record<string, string>,
      body?: string,
    ): Promise<{ status: number; contentType: string | null; text: string }> {
      const response = await fetch(`${platform.adminUrl}/admin/v1${path}`, {
        method,
        headers,
        ...(body !== undefined && { body }),
      })
      return {
        status: response.status,
        contentType: response.headers.get('content-type'),
        text: await response.text(),
      }
    }

    function attachTranscript(enterpriseId: number, audioId: string, body: unknown) {
      return admin(platform, 'PUT', `/enterprises/${enterpriseId}/recordings/${audioId}/transcript`, body)
    }

    async function countRecordings(enterpriseId: number): Promise<number> {
      const [row] = await platform.context.db.query<{ n: number }>(
        'SELECT count(*) AS n FROM recordings WHERE enterprise_id = $1',
        [enterpriseId],
      )
      return row?.n ?? -1
    }

    async function ingestRaw(enterpriseId: number, body: unknown) {
      return admin<Refusal & { audioId: string }>(
        platform,
        'POST',
        `/enterprises/${enterpriseId}/recordings`,
        body,
      )
    }

    const validRecording = {
      deviceUid: 'dev-1',
      title: 'Standup',
      recordedAt: '2026-05-01T09:00:00+02:00',
      denoiseUrl: 'https://cdn.example/a.mp3',
      recordDuration: 12,
    }

    before(async () => {
      platform = await startTestPlatform(backend)
      partner = await createPartner(platform, 'Admin Test Co')
    })
    after(async () => {
      await platform?.stop()
    })

    test('a missing or wrong admin token is refused with 401 and code 4010', async () => {
      const list = `${platform.adminUrl}/admin/v1/enterprises`
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong-token-0123456789' },
        { authorization: `Bearer ${platform.adminToken}x` },
        { authorization: platform.adminToken },
        { authorization: `Basic ${platform.adminToken}` },
      ]
      for (const headers of attempts) {
        const response = await fetch(list, { headers })
        const body = (await response.json()) as Refusal
        expectRefusal({ status: response.status, body }, 401, 4010)
        assert.equal(response.headers.get('x-request-id'), body.requestId)
      }
      const create = await rawAdmin(
        'POST',
        '/enterprises',
        { 'content-type': 'application/json', authorization: 'Bearer nope-nope-nope-nope' },
        JSON.stringify({ name: 'Sneaky' }),
      )
      assert.equal(create.status, 401)
      assert.equal(JSON.parse(create.text).code, 4010)
      const names = (await admin<{ enterprises: Summary[] }>(platform, 'GET', '/enterprises')).body
        .enterprises
      assert.ok(!names.some((each) => each.name === 'Sneaky'))
      // The scheme in any case, before one or more spaces (RFC 9110).
      for (const scheme of ['bearer', 'BEARER', 'Bearer ']) {
        const response = await fetch(list, { headers: { authorization: `${scheme} ${platform.adminToken}` } })
        assert.equal(response.status, 200, scheme)
      }
    })

    test('create: 201 with a 44-character Base64 secret that works for a token', async () => {
      const created = await admin<Credentials>(platform, 'POST', '/enterprises', { name: '  Created Co  ' })
      assert.equal(created.status, 201)
      assert.deepEqual(Object.keys(created.body).sort(), ['enterpriseId', 'keyVersion', 'secret'])
      assert.ok(Number.isSafeInteger(created.body.enterpriseId) && created.body.enterpriseId > 0)
      assert.equal(created.body.keyVersion, 1)
      assert.match(created.body.secret, /^[A-Za-z0-9+/]{43}=$/)
      assert.equal(Buffer.from(created.body.secret, 'base64').length, 32)
      const token = await partnerFor(platform, created.body).token()
      assert.match(token, /^v1\./)
      const other = await admin<Credentials>(platform, 'POST', '/enterprises', {
        name: 'Pushy',
        pushUrl: 'https://localhost/hook',
      })
      assert.equal(other.status, 201)
      assert.notEqual(other.body.enterpriseId, created.body.enterpriseId)
      assert.notEqual(other.body.secret, created.body.secret)
    })

    test('create refuses a missing or blank name and a bad pushUrl with 4001 naming the field', async () => {
      for (const body of [{}, { name: '' }, { name: '   ' }, { name: 7 }, { name: 'x'.repeat(201) }]) {
        expectRefusal(await admin(platform, 'POST', '/enterprises', body), 400, 4001, /^name/)
      }
      expectRefusal(
        await admin(platform, 'POST', '/enterprises', { name: 'Bad Push', pushUrl: 'ftp://x' }),
        400,
        4001,
        /^pushUrl/,
      )
      expectRefusal(await admin(platform, 'POST', '/enterprises', []), 400, 4000)
      expectRefusal(
        await admin(platform, 'POST', '/enterprises', { name: 'Nul\u0000Co' }),
        400,
        4001,
        /^name/,
      )
    })

    test('list shows every enterprise with its keys', async () => {
      const { status, body } = await admin<{ enterprises: Summary[] }>(platform, 'GET', '/enterprises')
      assert.equal(status, 200)
      const names = body.enterprises.map((each) => each.name)
      assert.deepEqual(names, ['Admin Test Co', 'Created Co', 'Pushy'])
      const pushy = body.enterprises[2] as Summary
      assert.equal(pushy.pushUrl, 'https://localhost/hook')
      assert.equal(pushy.disabled, false)
      assert.match(pushy.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      assert.equal(pushy.keys.length, 1)
      assert.equal(pushy.keys[0]?.keyVersion, 1)
      assert.equal(pushy.keys[0]?.retiresAt, null)
      assert.ok(!JSON.stringify(body).includes('secret'), 'the list shows no secrets')
    })

    test('disable marks the enterprise disabled; an unknown one is 4040', async () => {
      const doomed = await admin<Credentials>(platform, 'POST', '/enterprises', { name: 'Doomed' })
      const id = doomed.body.enterpriseId
      const disabled = await admin(platform, 'POST', `/enterprises/${id}/disable`)
      assert.equal(disabled.status, 200)
      assert.deepEqual(disabled.body, { enterpriseId: id, disabled: true })
      // Disabling twice is fine.
      assert.equal((await admin(platform, 'POST', `/enterprises/${id}/disable`)).status, 200)
      const list = await admin<{ enterprises: Summary[] }>(platform, 'GET', '/enterprises')
      assert.equal(list.body.enterprises.find((each) => each.enterpriseId === id)?.disabled, true)
      expectRefusal(await admin(platform, 'POST', '/enterprises/999999/disable'), 404, 4040, /999999/)
      expectRefusal(await admin(platform, 'POST', '/enterprises/abc/disable'), 400, 4001, /enterpriseId/)
      expectRefusal(await admin(platform, 'POST', '/enterprises/0/disable'), 400, 4001, /enterpriseId/)
    })

    test('PATCH an enterprise sets requireIssuedAt, answers it as it is now; a wrong body or id is refused', async () => {
      const strict = await admin<Credentials>(platform, 'POST', '/enterprises', { name: 'Strict Co' })
      const id = strict.body.enterpriseId
      const listed = async () =>
        (await admin<{ enterprises: Summary[] }>(platform, 'GET', '/enterprises')).body.enterprises.find(
          (each) => each.enterpriseId === id,
        )
      assert.equal((await listed())?.requireIssuedAt, false)
      const updated = await admin<Summary>(platform, 'PATCH', `/enterprises/${id}`, { requireIssuedAt: true })
      assert.equal(updated.status, 200)
      assert.deepEqual(updated.body, await listed())
      assert.equal(updated.body.requireIssuedAt, true)
      assert.equal(updated.body.name, 'Strict Co')

      const path = `/enterprises/${id}`
      expectRefusal(
        await admin(platform, 'PATCH', path, { requireIssuedAt: 'yes' }),
        400,
        4001,
        /^requireIssuedAt: must be true or false/,
      )
      expectRefusal(await admin(platform, 'PATCH', path, {}), 400, 4001, /requireIssuedAt/)
      expectRefusal(await admin(platform, 'PATCH', path, { retention: 3 }), 400, 4001, /^retention: /)
      expectRefusal(await admin(platform, 'PATCH', path, []), 400, 4000)
      const unknown = { requireIssuedAt: false }
      expectRefusal(await admin(platform, 'PATCH', '/enterprises/999999', unknown), 404, 4040, /999999/)
      expectRefusal(await admin(platform, 'PATCH', '/enterprises/abc', unknown), 400, 4001, /enterpriseId/)
      assert.equal((await listed())?.requireIssuedAt, true)
      assert.equal((await admin(platform, 'PATCH', path, { requireIssuedAt: false })).status, 200)
      assert.equal((await listed())?.requireIssuedAt, false)
    })

    test('rotate-key issues the next keyVersion; the previous one gets a retirement time', async () => {
      const rotated = await admin<Credentials & { previousKeyVersion: number; previousKeyRetiresAt: string }>(
        platform,
        'POST',
        `/enterprises/${partner.enterpriseId}/rotate-key`,
      )
      assert.equal(rotated.status, 200)
      assert.equal(rotated.body.enterpriseId, partner.enterpriseId)
      assert.equal(rotated.body.keyVersion, 2)
      assert.equal(rotated.body.previousKeyVersion, 1)
      assert.match(rotated.body.secret, /^[A-Za-z0-9+/]{43}=$/)
      assert.notEqual(rotated.body.secret, partner.secret)
      const retires = Date.parse(rotated.body.previousKeyRetiresAt)
      // keyGraceSeconds defaults to 24 h.
      assert.ok(Math.abs(retires - Date.now() - 86_400_000) < 60_000, rotated.body.previousKeyRetiresAt)
      await partnerFor(platform, rotated.body).token()
      await partner.token()

      const again = await admin<Credentials & { previousKeyVersion: number }>(
        platform,
        'POST',
        `/enterprises/${partner.enterpriseId}/rotate-key`,
      )
      assert.equal(again.body.keyVersion, 3)
      assert.equal(again.body.previousKeyVersion, 2)
      const list = await admin<{ enterprises: Summary[] }>(platform, 'GET', '/enterprises')
      const keys = list.body.enterprises.find((each) => each.enterpriseId === partner.enterpriseId)?.keys
      assert.deepEqual(
        keys?.map((key) => [key.keyVersion, key.retiresAt === null]),
        [
          [1, false],
          [2, false],
          [3, true],
        ],
      )
      expectRefusal(await admin(platform, 'POST', '/enterprises/999999/rotate-key'), 404, 4040)
    })

    test('push-url accepts http(s) URLs and null, and refuses anything else with 4001 naming pushUrl', async () => {
      const path = `/enterprises/${partner.enterpriseId}/push-url`
      const pushUrlOf = async () =>
        (await admin<{ enterprises: Summary[] }>(platform, 'GET', '/enterprises')).body.enterprises.find(
          (each) => each.enterpriseId === partner.enterpriseId,
        )?.pushUrl
      for (const url of ['http://127.0.0.1:9000/push', 'https://localhost/earshot?x=1']) {
        const set = await admin(platform, 'PUT', path, { pushUrl: url })
        assert.equal(set.status, 200)
        assert.deepEqual(set.body, { enterpriseId: partner.enterpriseId, pushUrl: url, cancelled: 0 })
        assert.equal(await pushUrlOf(), url)
      }
      for (const bad of ['ftp://x', 'not a url', 'http://', '/relative', 42]) {
        expectRefusal(await admin(platform, 'PUT', path, { pushUrl: bad }), 400, 4001, /^pushUrl/)
      }
      // A refused value leaves the previous one in place.
      assert.equal(await pushUrlOf(), 'https://localhost/earshot?x=1')
      const cleared = await admin(platform, 'PUT', path, { pushUrl: null })
      assert.equal(cleared.status, 200)
      assert.deepEqual(cleared.body, { enterpriseId: partner.enterpriseId, pushUrl: null, cancelled: 0 })
      assert.equal(await pushUrlOf(), null)
      expectRefusal(
        await admin(platform, 'PUT', '/enterprises/999999/push-url', { pushUrl: 'https://localhost/' }),
        404,
        4040,
      )
    })

    test('ingest: 201 with the audioId, given or assigned', async () => {
      const given = await ingestRaw(partner.enterpriseId, { ...validRecording, audioId: 'adm-1' })
      assert.equal(given.status, 201)
      assert.deepEqual(given.body, { audioId: 'adm-1' })
      const assigned = await ingestRaw(partner.enterpriseId, { ...validRecording, transcript })
      assert.equal(assigned.status, 201)
      assert.match(assigned.body.audioId, /^aud_[A-Za-z0-9_-]{16}$/)
      const transcriptOnly = await ingestRaw(partner.enterpriseId, {
        deviceUid: 'dev-2',
        title: 'Notes',
        recordedAt: '2026-05-01T07:00:00Z',
        transcript,
      })
      assert.equal(transcriptOnly.status, 201)
      assert.equal(await countRecordings(partner.enterpriseId), 3)
    })

    test('ingest refuses invalid recordings with 4001 naming the field, storing nothing', async () => {
      const before = await countRecordings(partner.enterpriseId)
      const { deviceUid: _omit, ...withoutDevice } = validRecording
      expectRefusal(await ingestRaw(partner.enterpriseId, withoutDevice), 400, 4001, /^deviceUid/)
      for (const recordedAt of ['2026-05-01T09:00:00', '2026-05-01', '2026-13-01T00:00:00Z', 'yesterday']) {
        expectRefusal(
          await ingestRaw(partner.enterpriseId, { ...validRecording, recordedAt }),
          400,
          4001,
          /^recordedAt/,
        )
      }
      // A time PostgreSQL cannot hold is refused too, not an internal error.
      for (const recordedAt of ['2026-05-01T09:00:00+20:00', '0000-05-01T09:00:00Z']) {
        expectRefusal(
          await ingestRaw(partner.enterpriseId, { ...validRecording, recordedAt }),
          400,
          4001,
          /^recordedAt/,
        )
      }
      // PostgreSQL text cannot hold U+0000: refused, not an internal error.
      expectRefusal(
        await ingestRaw(partner.enterpriseId, { ...validRecording, deviceUid: 'dev\u0000' }),
        400,
        4001,
        /^deviceUid/,
      )
      expectRefusal(
        await ingestRaw(partner.enterpriseId, {
          ...validRecording,
          transcript: { ...transcript, transcriptText: 'a\u0000b' },
        }),
        400,
        4001,
        /^transcript\.transcriptText/,
      )
      const { recordDuration: _duration, ...onlyDenoiseUrl } = validRecording
      expectRefusal(await ingestRaw(partner.enterpriseId, onlyDenoiseUrl), 400, 4001, /denoiseUrl/)
      const { denoiseUrl: _url, ...onlyDuration } = validRecording
      expectRefusal(await ingestRaw(partner.enterpriseId, onlyDuration), 400, 4001, /denoiseUrl/)
      const { denoiseUrl: _u, recordDuration: _d, ...neither } = validRecording
      expectRefusal(await ingestRaw(partner.enterpriseId, neither), 400, 4001, /audio part/)
      expectRefusal(
        await ingestRaw(partner.enterpriseId, { ...validRecording, audioId: 'adm-1' }),
        400,
        4001,
        /^audioId: "adm-1" already exists/,
      )
      expectRefusal(
        await ingestRaw(partner.enterpriseId, { ...validRecording, colour: 'blue' }),
        400,
        4001,
        /colour/,
      )
      expectRefusal(
        await ingestRaw(partner.enterpriseId, { ...validRecording, recordDuration: -1 }),
        400,
        4001,
        /recordDuration/,
      )
      expectRefusal(
        await ingestRaw(partner.enterpriseId, {
          ...validRecording,
          transcript: { ...transcript, wordsCount: 1.5 },
        }),
        400,
        4001,
        /transcript\.wordsCount/,
      )
      assert.equal(await countRecordings(partner.enterpriseId), before)
      expectRefusal(await ingestRaw(999_999, validRecording), 404, 4040, /999999/)
    })

    test('an audioId used by another enterprise is refused as already existing', async () => {
      const other = await createPartner(platform, 'Neighbour')
      expectRefusal(
        await ingestRaw(other.enterpriseId, { ...validRecording, audioId: 'adm-1' }),
        400,
        4001,
        /already exists/,
      )
      assert.equal(await countRecordings(other.enterpriseId), 0)
    })

    test('transcript attach: 200 for a recording, 4040 for an unknown audioId or enterprise', async () => {
      const attached = await attachTranscript(partner.enterpriseId, 'adm-1', transcript)
      assert.equal(attached.status, 200)
      assert.deepEqual(attached.body, { audioId: 'adm-1' })
      const [row] = await platform.context.db.query<{ transcript_id: number }>(
        'SELECT transcript_id FROM recordings WHERE audio_id = $1',
        ['adm-1'],
      )
      assert.equal(row?.transcript_id, 77)
      expectRefusal(
        await attachTranscript(partner.enterpriseId, 'adm-nope', transcript),
        404,
        4040,
        /adm-nope/,
      )
      expectRefusal(await attachTranscript(999999, 'adm-1', transcript), 404, 4040)
      expectRefusal(await attachTranscript(partner.enterpriseId, 'adm-1%00', transcript), 404, 4040)
      expectRefusal(
        await attachTranscript(partner.enterpriseId, 'adm-1', {
          ...transcript,
          transcriptText: '\u0000',
        }),
        400,
        4001,
        /^transcriptText/,
      )
      // Another enterprise's recording is as unknown as a missing one.
      const other = await createPartner(platform, 'Outsider')
      expectRefusal(await attachTranscript(other.enterpriseId, 'adm-1', transcript), 404, 4040)
      expectRefusal(
        await attachTranscript(partner.enterpriseId, 'adm-1', {
          ...transcript,
          sentences: 'not an array',
        }),
        400,
        4001,
        /sentences/,
      )
    })
  })
}
