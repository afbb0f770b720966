/**
 * Fault injection (issue 9, 5): `earshot-partner listen` is killed with SIGKILL between its answer to a
 * push and the receipt callback reaching the platform, 10 times. The window is made deterministic with
 * a proxy in front of the platform's partner API: it holds the receipt callbacks, and the listener is
 * killed once it holds some of the callbacks for the pushes just answered. The platform's confirm window
 * is long (no re-push comes to the rescue): every receipt must come from the kit's durable outbox.
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { loadKey, open } from '@earshot/protocol'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import {
  allDeliveries,
  allInState,
  createEnterprise,
  type HoldingProxy,
  importRecordings,
  recordingBatch,
  seededRandom,
  setPushUrl,
  startHoldingProxy,
  waitFor,
} from '@earshot/test-kit/fault-kit'
import { type RestartablePlatform, restartablePlatform } from '@earshot/test-kit/fault-platform'
import { closedPort, spawnCli } from '@earshot/test-kit/run-cli'

const bin = fileURLToPath(new URL('../../bin/earshot-partner.js', import.meta.url))
const KILLS = 10
/** Recordings imported before each kill, every other one with its transcript: 30 deliveries. */
const BATCH = 20
const CALLBACK_PATH = '/openapi/v1/callback'

interface Listener {
  child: ChildProcess
  stderr: () => string
  exited: Promise<number | string | null>
}

/** Starts the built `earshot-partner listen` (added to `started` at once) and waits until it listens. */
async function startListen(
  args: string[],
  env: Record<string, string>,
  started: ChildProcess[],
): Promise<Listener> {
  const child = spawnCli(bin, ['listen', ...args], env)
  started.push(child)
  let stdout = ''
  let stderr = ''
  child.stderr.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = new Promise<number | string | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal)),
  )
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk
      if (/^listening on \S+$/m.test(stdout)) resolve()
    })
    void exited.then((code) => reject(new Error(`listen exited with ${code}: ${stderr}`)))
  })
  return { child, stderr: () => stderr, exited }
}

// The listener keeps its own embedded database whatever the platform runs on, and the window under
// test is between the listener and the platform's partner API: one platform backend is enough — the
// PostgreSQL one when DATABASE_URL is set (as in CI), else the embedded one.
const backend = testBackends.at(-1) ?? 'pglite'
describe(`${backend}: earshot-partner listen killed between its answer and its callback`, () => {
  const directory = mkdtempSync(join(tmpdir(), 'earshot-faults-listen-'))
  let scratch: ScratchDatabase | undefined
  let platform: RestartablePlatform | undefined
  let proxy: HoldingProxy | undefined
  let listener: Listener | undefined
  const listeners: ChildProcess[] = []
  after(async () => {
    for (const child of listeners) {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGKILL')
        await gone
      }
    }
    await proxy?.close()
    await platform?.dispose()
    await scratch?.drop()
    rmSync(directory, { recursive: true, force: true })
  })

  test(`${KILLS} kills with callbacks on their way: every receipt arrives, every delivery confirmed`, {
    timeout: 240_000,
  }, async (t) => {
    const log = (line: string) => t.diagnostic(line)
    const random = seededRandom(`listen-kill ${backend}`, (line) => {
      console.log(line)
      log(line)
    })
    scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
    platform = await restartablePlatform({
      ...(scratch ? { DATABASE_URL: scratch.url } : { EARSHOT_DATA_DIR: join(directory, 'platform') }),
      EARSHOT_PUSH_ALLOW_PRIVATE: '1',
      EARSHOT_PUSH_TIMEOUT: '5',
      // Pushes to a killed listener are retried for well over its restart.
      EARSHOT_PUSH_RETRY_SCHEDULE: Array.from({ length: 30 }, (_, i) => (i < 2 ? 0.25 : 1)).join(','),
      // No re-push within the test: a receipt can only come from the listener's outbox.
      EARSHOT_PUSH_CONFIRM_WINDOW: '600',
      EARSHOT_RATE_LIMIT: '0',
    })
    const running = platform.current
    proxy = await startHoldingProxy(() => running.partnerUrl)
    const callbacks = proxy
    const credentials = await createEnterprise(running, 'Killed listener')
    const key = loadKey(credentials.secret)
    const audioIdOf = (body: string) => String(open(JSON.parse(body), key).plaintext.audioId)

    const port = await closedPort()
    const data = join(directory, 'listener')
    const env = {
      // Its receipt callbacks go through the proxy.
      EARSHOT_BASE_URL: callbacks.url,
      EARSHOT_ENTERPRISE_ID: String(credentials.enterpriseId),
      EARSHOT_KEY_VERSION: String(credentials.keyVersion),
      EARSHOT_SECRET: credentials.secret,
    }
    const args = ['--port', String(port), '--data', data]
    let stderr = ''
    const listen = async () => {
      listener = await startListen(args, env, listeners)
      const current = listener
      void current.exited.then(() => {
        stderr += current.stderr()
      })
    }
    await listen()
    await setPushUrl(running, credentials.enterpriseId, `http://127.0.0.1:${port}/earshot/push`)

    let events = 0
    const cut: string[] = []
    const kills: string[] = []
    const began = performance.now()
    for (let kill = 1; kill <= KILLS; kill++) {
      const cycle = performance.now()
      const batch = recordingBatch(`listen-${kill}`, BATCH, (i) => i % 2 === 1)
      const mine = new Set(batch.audioIds)
      const wanted = random.int(1, 6)
      // Only this batch's callbacks: those the restarted listener sends again for earlier batches pass.
      callbacks.hold((request) => request.path === CALLBACK_PATH && mine.has(audioIdOf(request.body)))
      const { imported } = await importRecordings(running, credentials.enterpriseId, batch)
      assert.equal(imported, BATCH)
      events += batch.events
      // Callbacks of pushes just answered, held on their way to the platform.
      await waitFor(
        `${wanted} callbacks of batch ${kill} held`,
        async () => callbacks.held().length >= wanted,
        { intervalMs: 5 },
      )
      const current = listener as Listener
      current.child.kill('SIGKILL')
      assert.equal(await current.exited, 'SIGKILL')
      const dropped = callbacks.drop().map((request) => audioIdOf(request.body))
      cut.push(...dropped)
      const killedAfter = performance.now() - cycle
      callbacks.pass()
      await listen()
      kills.push(
        `#${kill}: ${dropped.length} cut (killed ${Math.round(killedAfter)} ms after the import, ` +
          `restarted in ${Math.round(performance.now() - cycle - killedAfter)} ms)`,
      )
    }
    log(`kills: ${kills.join('; ')}`)
    const killsDone = performance.now()

    const deliveries = await allInState(() => running, credentials.enterpriseId, 'confirmed', events, {
      timeoutMs: 120_000,
    }).catch(async (error: Error) => {
      const open = (await allDeliveries(running, credentials.enterpriseId)).filter(
        (d) => d.state !== 'confirmed',
      )
      const lines = (listener?.stderr() ?? '').split('\n')
      assert.fail(
        `${error.message}\nnot confirmed: ${JSON.stringify(open.slice(0, 10), null, 1)}\n` +
          `callbacks forwarded by the proxy: ${JSON.stringify(callbacks.forwarded())}\n` +
          `the listener's last lines:\n${lines.slice(-40).join('\n')}`,
      )
    })
    const confirmedAfter = performance.now() - killsDone
    log(
      `${Math.round(killsDone - began)} ms of kills, then all confirmed ${Math.round(confirmedAfter)} ms later`,
    )
    const confirmed = new Set(deliveries.map((d) => d.audioId))
    const lost = cut.filter((audioId) => !confirmed.has(audioId))
    const repushes = deliveries.filter((d) => d.attempts.filter((a) => a.outcome === 'acked').length > 1)
    const current = listener as Listener
    current.child.kill('SIGTERM')
    assert.equal(await current.exited, 0, current.stderr())
    const stored = stderr.split('\n').filter((line) => line.startsWith('stored ')).length
    const confirmedLines = stderr.split('\n').filter((line) => line.startsWith('confirmed ')).length
    log(
      `events ${events}, kills ${KILLS}, callbacks cut by the kills ${cut.length} (${new Set(cut).size} recordings), ` +
        `onRecording calls ${stored} (${stored - events} repeated), receipts confirmed by the listener ${confirmedLines}, ` +
        `callbacks forwarded ${callbacks.forwarded()[CALLBACK_PATH] ?? 0}, deliveries acked more than once ${repushes.length}, lost ${lost.length}`,
    )
    assert.ok(cut.length >= KILLS, 'every kill cut at least one callback on its way')
    assert.deepEqual(lost, [], 'every cut callback arrived after the restart')
    assert.doesNotMatch(stderr, /^error:/m)
  })
})
