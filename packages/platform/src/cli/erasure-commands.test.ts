import assert from 'node:assert/strict'
import { createHash, createPublicKey, type JsonWebKeyInput, verify } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { adminCall, createPartner, ingest } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { jsonError, jsonOf, runCli } from '@earshot/test-kit/run-cli'
import canonicalize from 'canonicalize'

/**
 * `earshot erasure create|list|show|report` and `enterprise update --retention-days`, the built CLI
 * against a running platform: an erasure of a device requested, listed and shown by its subjectHash only,
 * its report verified with the public key; unknown erasures refused with 4040. A CLI process costs about a
 * second, so each test runs several, some side by side.
 */

const cli = fileURLToPath(new URL('../../bin/earshot.js', import.meta.url))

const recording = (deviceUid: string, n: number) => ({
  deviceUid,
  title: `Erase me ${n}`,
  recordedAt: new Date().toISOString(),
  denoiseUrl: `https://cdn.example/erase-${n}.mp3`,
  recordDuration: 1000,
})

for (const backend of testBackends) {
  describe(`earshot erasure against a running platform (${backend})`, { timeout: 120_000 }, () => {
    let platform: TestPlatform
    let env: Record<string, string>
    const earshot = (...args: string[]) => runCli(cli, args, env)

    before(async () => {
      platform = await startTestPlatform(backend, { pushDispatch: false })
      env = { EARSHOT_URL: platform.adminUrl, EARSHOT_ADMIN_TOKEN: platform.adminToken }
    })
    after(() => platform?.stop())

    test('create, list, show and report an erasure of a device; the deviceUid is never shown back', async () => {
      const { enterpriseId } = await createPartner(platform, 'Erasure CLI Co')
      const id = String(enterpriseId)
      for (const n of [1, 2]) await ingest(platform, enterpriseId, recording('DEV-CLI-GONE', n))
      const created = jsonOf<{ erasureId: number; recordings: number }>(
        await earshot(
          'erasure',
          'create',
          '--enterprise',
          id,
          '--device-uid',
          'DEV-CLI-GONE',
          '--reason',
          'ticket 7',
          '--json',
        ),
      )
      assert.deepEqual(created, { erasureId: created.erasureId, recordings: 2 })
      const erasureId = String(created.erasureId)
      await eventually(
        async () =>
          (await adminCall(platform, 'showErasure', { params: { erasureId: created.erasureId } })).state !==
          'running',
        20_000,
        'the erasure complete',
      )

      const [listed, shown, table, text, signed] = await Promise.all([
        earshot('erasure', 'list', '--enterprise', id, '--json'),
        earshot('erasure', 'show', erasureId, '--json'),
        earshot('erasure', 'list'),
        earshot('erasure', 'show', erasureId),
        earshot('erasure', 'report', erasureId),
      ])
      const hash = createHash('sha256').update(`${enterpriseId}:DEV-CLI-GONE`).digest('hex')
      const [row] = jsonOf<{ erasureId: number; subjectHash: string; kind: string; reason: string }[]>(listed)
      assert.deepEqual(
        [row?.erasureId, row?.kind, row?.subjectHash, row?.reason],
        [created.erasureId, 'device', hash, 'ticket 7'],
      )
      const detail = jsonOf<{ state: string; recordings: number; endpoints: unknown[] }>(shown)
      assert.deepEqual(Object.keys(detail), [
        'erasureId',
        'enterpriseId',
        'kind',
        'subjectHash',
        'reason',
        'requestedBy',
        'requestedAt',
        'state',
        'recordings',
        'deletedAt',
        'completedAt',
        'confirmedAt',
        'endpoints',
      ])
      assert.ok(['complete', 'confirmed'].includes(detail.state))
      assert.deepEqual([detail.recordings, detail.endpoints], [2, []])

      assert.equal(table.code, 0, table.stderr)
      assert.match(table.stdout, /^ID +ENTERPRISE +KIND +STATE +RECORDINGS +REQUESTED +BY +SUBJECT +REASON\n/)
      assert.match(
        table.stdout,
        new RegExp(
          `^${erasureId} +${id} +device +(complete|confirmed) +2 +\\S+ +break-glass +${hash.slice(0, 12)}… +ticket 7$`,
          'm',
        ),
      )
      assert.equal(text.code, 0, text.stderr)
      assert.match(text.stdout, new RegExp(`^Erasure ${erasureId} of enterprise ${id} \\(device\\)\n`))
      assert.match(text.stdout, new RegExp(`^ {2}subject: +${hash}$`, 'm'))
      assert.match(text.stdout, /^No endpoint was pushed a deletion\.$/m)
      for (const run of [listed, shown, table, text, signed]) assert.ok(!run.stdout.includes('DEV-CLI-GONE'))

      assert.equal(signed.code, 0, signed.stderr)
      assert.ok(signed.stdout.split('\n').length > 10, 'indented JSON')
      const { report, signature } = JSON.parse(signed.stdout)
      assert.equal(report.erasureId, created.erasureId)
      assert.equal(report.audioIds.length, 2)
      const jwk = (await (
        await fetch(`${platform.partnerUrl}/.well-known/earshot-erasure-key`)
      ).json()) as JsonWebKeyInput['key']
      const key = createPublicKey({ key: jwk, format: 'jwk' })
      assert.ok(
        verify(null, Buffer.from(canonicalize(report) as string), key, Buffer.from(signature, 'base64url')),
      )
    })

    test('refusals: unknown erasures and audioIds (4040), nothing to erase, both subjects', async () => {
      const { enterpriseId } = await createPartner(platform, 'Erasure Refusals Co')
      const id = String(enterpriseId)
      const [unknown, unknownReport, unknownAudio, nothing, both] = await Promise.all([
        earshot('erasure', 'show', '999999', '--json'),
        earshot('erasure', 'report', '999999'),
        earshot('erasure', 'create', '--enterprise', id, '--audio-id', 'no-such-1', 'no-such-2', '--json'),
        earshot('erasure', 'create', '--enterprise', id, '--json'),
        earshot('erasure', 'create', '--enterprise', id, '--device-uid', 'D', '--audio-id', 'A'),
      ])
      assert.deepEqual(jsonError(unknown), {
        code: 4040,
        msg: 'no erasure 999999; `earshot erasure list` lists them',
      })
      assert.equal(unknownReport.code, 1)
      assert.equal(unknownReport.stdout, '')
      assert.equal(unknownReport.stderr, 'error 4040: no erasure 999999; `earshot erasure list` lists them\n')
      const refused = jsonError(unknownAudio)
      assert.equal(refused.code, 4040)
      assert.match(refused.msg, /"no-such-1", "no-such-2"/)
      assert.equal(jsonError(nothing).code, 'ERR_EARSHOT_COMMAND')
      assert.notEqual(both.code, 0)
      assert.match(both.stderr, /--device-uid.*cannot be used with.*--audio-id/)
    })

    test('enterprise update --retention-days sets and clears the policy, as enterprise list --json shows it', async () => {
      const { enterpriseId } = await createPartner(platform, 'Retention CLI Co')
      const id = String(enterpriseId)
      const set = jsonOf<{ enterpriseId: number; retentionDays: number | null }>(
        await earshot('enterprise', 'update', id, '--retention-days', '30', '--json'),
      )
      const { enterprises } = await adminCall(platform, 'listEnterprises')
      assert.deepEqual(
        set,
        enterprises.find((each) => each.enterpriseId === enterpriseId),
      )
      assert.equal(set.retentionDays, 30)
      const [cleared, wrong] = await Promise.all([
        earshot('enterprise', 'update', id, '--retention-days', '0'),
        earshot('enterprise', 'update', id, '--retention-days', '-1'),
      ])
      assert.equal(cleared.code, 0, cleared.stderr)
      assert.equal(
        cleared.stdout,
        `Enterprise ${id} has no retention policy: its recordings are kept until deleted.\n`,
      )
      assert.notEqual(wrong.code, 0)
      assert.match(wrong.stderr, /--retention-days.*whole number of days/)
      const { enterprises: after } = await adminCall(platform, 'listEnterprises')
      assert.equal(after.find((each) => each.enterpriseId === enterpriseId)?.retentionDays, null)
    })
  })
}
