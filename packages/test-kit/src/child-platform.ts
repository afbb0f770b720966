import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { RunningPlatform } from '@earshot/platform'
import { TEST_ADMIN_TOKEN } from './admin-token.js'
import { TEST_NODE_FLAGS } from './run-cli.js'

export interface ChildPlatform extends Pick<RunningPlatform, 'partnerUrl' | 'adminUrl'> {
  adminToken: string
  process: ChildProcess
  /** Resolves with the exit code or signal once the process has gone. */
  exited: Promise<number | string | null>
}

const entry = new URL('./platform-process.js', import.meta.url).pathname

/** Starts test-support/platform-process.js with the given environment and waits until it listens. */
export async function startChildPlatform(env: Record<string, string>): Promise<ChildPlatform> {
  const child = spawn(process.execPath, [...TEST_NODE_FLAGS, entry], {
    env: {
      PATH: process.env.PATH ?? '',
      EARSHOT_PORT: '0',
      EARSHOT_ADMIN_PORT: '0',
      EARSHOT_LOG_LEVEL: 'warn',
      EARSHOT_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  const exited = new Promise<number | string | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal)),
  )
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })
  const ready = new Promise<ChildPlatform>((resolve, reject) => {
    lines.once('line', (line) => resolve({ ...JSON.parse(line), process: child, exited }))
    exited.then((code) => reject(new Error(`the platform exited (${code}) before listening: ${stderr}`)))
  })
  return ready
}
