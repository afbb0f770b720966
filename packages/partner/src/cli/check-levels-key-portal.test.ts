import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import type { JsonObject } from '@earshot/protocol'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { createPartner, ingest, type TestPartner } from '@earshot/test-kit/calls'
import { eventually } from '@earshot/test-kit/eventually'
import { emptyPglite } from '@earshot/test-kit/pglite-image'
import { type CliRun, runCli } from '@earshot/test-kit/run-cli'
import { startTestReceiver, type TestReceiver } from '@earshot/test-kit/test-receiver'
import { EarshotClient } from '../client/earshot-client.js'
import { silentLogger } from '../logging/receiver-logger.js'
import { type CallbackOutbox, openCallbackOutbox } from '../outbox/callback-outbox.js'
import { createPushReceiver } from '../receiver/push-receiver.js'
import type { Database } from '../storage/database.js'

/*
 * `earshot-partner check|levels|rotate-key|portal` with --json against a real platform: the kit's own
 * receiver passes the check, the service levels come from real deliveries, a rotated key works at once,
 * and a portal link points at the portal's door.
 */

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))

const envOf = (platform: TestPlatform, partner: TestPartner) => ({
  EARSHOT_BASE_URL: platform.partnerUrl,
  EARSHOT_ENTERPRISE_ID: String(partner.enterpriseId),
  EARSHOT_KEY_VERSION: String(partner.keyVersion),
  EARSHOT_SECRET: partner.secret,
})

function answerOf(run: CliRun): JsonObject {
  assert.equal(run.code, 0, run.stderr)
  const lines = run.stdout.split('\n').filter(Boolean)
  assert.equal(lines.length, 1, `one line on stdout: ${run.stdout}`)
  return JSON.parse(lines[0] as string)
}

describe('earshot-partner check, levels, rotate-key and portal against a platform', {
  timeout: 180_000,
}, () => {
  let platform: TestPlatform
  let server: Server | undefined
  let receiver: TestReceiver | undefined
  let outbox: CallbackOutbox | undefined
  let database: Database | undefined

  before(async () => {
    platform = await startTestPlatform('pglite', { pushTimeoutSeconds: 2 })
  })
  after(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)))
    await receiver?.close()
    await outbox?.close()
    await database?.close()
    await platform?.stop()
  })

  test("check: the kit's receiver passes; the report as JSON, exit 0", async () => {
    const partner = await createPartner(platform, 'Check Co')
    const client = new EarshotClient({ ...partner, baseUrl: platform.partnerUrl })
    database = await emptyPglite()
    outbox = await openCallbackOutbox({
      database,
      confirm: (audioId, options) => client.confirmReceipt(audioId, options),
    })
    const kit = createPushReceiver({
      secret: partner.secret,
      keyVersion: partner.keyVersion,
      outbox,
      log: silentLogger,
      onRecording: async () => {},
      onDeleted: async () => {},
    })
    server = createServer(kit.handler)
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/earshot/push`

    const run = await runCli(bin, ['check', url, '--json'], envOf(platform, partner))
    const report = answerOf(run)
    assert.equal(report.passed, true, run.stdout)
    assert.equal(report.enterpriseId, partner.enterpriseId)
    assert.equal(report.keyVersion, partner.keyVersion)
    const items = report.items as { id: string; passed: boolean }[]
    assert.deepEqual(
      items.filter((item) => !item.passed),
      [],
    )
    assert.ok(items.some((item) => item.id === 'callbacks'))
  })

  test('levels: every figure from the deliveries made, null for a window without any', async () => {
    const partner = await createPartner(platform, 'Levels Co')
    const env = envOf(platform, partner)
    const empty = answerOf(await runCli(bin, ['levels', '--json'], env))
    assert.deepEqual(empty, {
      firstAttemptP50Ms: null,
      firstAttemptP95Ms: null,
      firstAttemptAckShare: null,
      ackToReceiptP95Ms: null,
      backlog: 0,
    })

    const client = new EarshotClient({ ...partner, baseUrl: platform.partnerUrl })
    receiver = await startTestReceiver(partner.secret, {
      afterAnswer: (push) => void client.confirmReceipt(push.event.audioId).catch(() => undefined),
    })
    await client.addEndpoint({ url: receiver.url })
    await ingest(platform, partner.enterpriseId, {
      deviceUid: 'dev',
      title: 'measured',
      recordedAt: '2026-11-01T08:00:00Z',
      denoiseUrl: 'https://media.example/a.mp3',
      recordDuration: 1_000,
    })
    // The figures may lag the deliveries by a few seconds.
    const levels = await eventually(
      async () => {
        const answer = answerOf(await runCli(bin, ['levels', '--window', '7d', '--json'], env))
        return answer.ackToReceiptP95Ms !== null ? answer : undefined
      },
      30_000,
      'levels with the confirmed delivery',
    )
    assert.equal(levels.firstAttemptAckShare, 1)
    assert.equal(typeof levels.firstAttemptP50Ms, 'number')
    assert.ok((levels.firstAttemptP95Ms as number) >= (levels.firstAttemptP50Ms as number))
    assert.equal(levels.backlog, 0)

    // The same window as above: the 24 h one was read empty moments ago, and may be up to 10 s behind.
    const human = await runCli(bin, ['levels', '--window', '7d'], env)
    assert.equal(human.code, 0, human.stderr)
    assert.match(human.stdout, /^Service levels over the last 7d:\n/)
    assert.match(human.stdout, /acknowledged at first attempt: +100\.0 %/)
    assert.match(human.stdout, /backlog now: +0\n/)
  })

  test('rotate-key prints the new key once; queries work with it at once, the old key still in its grace', async () => {
    const partner = await createPartner(platform, 'Rotating Co')
    const env = envOf(platform, partner)
    const run = await runCli(bin, ['rotate-key', '--json'], env)
    const rotated = answerOf(run)
    assert.equal(rotated.keyVersion, partner.keyVersion + 1)
    assert.equal(typeof rotated.secret, 'string')
    assert.match(run.stderr, /EARSHOT_KEY_VERSION=\d+ and EARSHOT_SECRET/)

    const renewed = {
      ...env,
      EARSHOT_KEY_VERSION: String(rotated.keyVersion),
      EARSHOT_SECRET: rotated.secret as string,
    }
    assert.equal(answerOf(await runCli(bin, ['query', '--json'], renewed)).total, 0)
    assert.equal(answerOf(await runCli(bin, ['query', '--json'], env)).total, 0, 'the old key in its grace')

    const human = await runCli(bin, ['rotate-key'], renewed)
    assert.equal(human.code, 0, human.stderr)
    const secret = /^New secret: +(\S+)$/m.exec(human.stdout)?.[1] ?? ''
    assert.equal(human.stdout.split(secret).length, 2, 'the secret printed once')
    assert.match(human.stdout, /^New keyVersion: \d+$/m)
    assert.match(human.stdout, /Store them now as EARSHOT_KEY_VERSION=\d+ and EARSHOT_SECRET/)

    // The kit's client moves to the key it rotated to by itself.
    const sealedWith: [string, number][] = []
    const client = new EarshotClient({
      ...partner,
      baseUrl: platform.partnerUrl,
      fetch: (input, init) => {
        sealedWith.push([new URL(String(input)).pathname, JSON.parse(String(init?.body)).keyVersion])
        return fetch(input, init)
      },
    })
    await client.queryAudios()
    const again = await client.rotateKey()
    assert.equal(client.keyVersion, again.keyVersion)
    assert.equal((await client.queryAudios()).total, 0)
    assert.deepEqual(sealedWith.slice(-2), [
      ['/openapi/v1/token', again.keyVersion],
      ['/openapi/v1/audios', again.keyVersion],
    ])
    const renewedAgain = {
      ...env,
      EARSHOT_KEY_VERSION: String(again.keyVersion),
      EARSHOT_SECRET: again.secret,
    }
    assert.equal(answerOf(await runCli(bin, ['levels', '--json'], renewedAgain)).backlog, 0)
  })

  test('portal prints a one-time link to the portal: the URL alone, or {url, expiresAt}', async () => {
    const partner = await createPartner(platform, 'Portal Co')
    const env = envOf(platform, partner)
    const link = answerOf(await runCli(bin, ['portal', '--access', 'view', '--json'], env))
    assert.deepEqual(Object.keys(link), ['url', 'expiresAt'])
    assert.match(link.url as string, /^https?:\/\/[^/]+\/portal\/enter\/\S+$/)
    assert.ok(Date.parse(link.expiresAt as string) > Date.now(), 'it expires later')

    const human = await runCli(bin, ['portal'], env)
    assert.equal(human.code, 0, human.stderr)
    assert.match(human.stdout, /^https?:\/\/[^/]+\/portal\/enter\/\S+\n$/)
    assert.notEqual(human.stdout.trim(), link.url, 'a new link each time')
  })
})
