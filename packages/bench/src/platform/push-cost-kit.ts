/**
 * The Node kit's real receiver for push-cost.bench.ts: `earshot-partner listen` (its bin, as a partner runs
 * it), storing each recording in a PGlite data directory of its own, answering at once and confirming each
 * push's receipt through its durable outbox. Confirmations are counted from its `confirmed <audioId>` lines.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Credentials } from './push-bench-api.js'

const BIN = new URL('../../../partner/bin/earshot-partner.js', import.meta.url).pathname
const READY_MS = 60_000

export interface KitReceiver {
  pid: number
  /** Its push URL. */
  url: string
  confirmed(): number
  /** What it printed besides its confirmations (the first 2,000 characters). */
  output(): string
  stop(): Promise<void>
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', () => resolve()))
}

/** Starts a listener for the enterprise, calling back to `partnerUrl`; resolves once it listens. */
export async function startKitReceiver(partnerUrl: string, credentials: Credentials): Promise<KitReceiver> {
  const dir = mkdtempSync(join(tmpdir(), 'earshot-push-cost-kit-'))
  const child = spawn(process.execPath, [BIN, 'listen', '--port', '0', '--data', dir], {
    env: {
      PATH: process.env.PATH,
      EARSHOT_BASE_URL: partnerUrl,
      EARSHOT_ENTERPRISE_ID: String(credentials.enterpriseId),
      EARSHOT_KEY_VERSION: String(credentials.keyVersion),
      EARSHOT_SECRET: credentials.secret,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let url: string | undefined
  let confirmed = 0
  let errors = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    url ??= /listening on (\S+)/.exec(chunk)?.[1]
  })
  createInterface({ input: child.stderr }).on('line', (line) => {
    if (line.startsWith('confirmed ') && !line.startsWith('confirmed the erasure')) confirmed++
    else if (errors.length < 2000) errors += `${line}\n`
  })
  const stop = async () => {
    child.kill('SIGTERM')
    await exited(child)
    rmSync(dir, { recursive: true, force: true })
  }
  const deadline = performance.now() + READY_MS
  while (!url) {
    if (child.exitCode !== null || performance.now() > deadline) {
      await stop()
      throw new Error(`earshot-partner listen did not start: ${errors}`)
    }
    await sleep(50)
  }
  return { pid: child.pid as number, url, confirmed: () => confirmed, output: () => errors, stop }
}
