import { join } from 'node:path'
import { Command } from 'commander'
import type { EarshotClient } from '../client/earshot-client.js'
import { openChangeMirror, syncChanges } from '../mirror/change-mirror.js'
import { openDatabase } from '../storage/database.js'
import { CommandFailure, positiveInteger, printJson, printLines, runWithClient } from './command-support.js'

interface SyncCommandOptions {
  data: string
  follow?: boolean
  size?: number
  json?: boolean
}

/**
 * `earshot-partner sync --data DIR [--follow]`: keeps a mirror of the enterprise's
 * recordings in a PGlite in DIR/db current from the change feed. Each page is committed with the cursor
 * after it, so a sync stopped in any way (kill -9 included) resumes where the last page ended. Exits 0
 * once caught up; with --follow it polls on until SIGINT or SIGTERM, then exits 0.
 */
export function syncCommand(): Command {
  return new Command('sync')
    .description(
      'keep a local mirror of your recordings (DIR/db) current from the change feed; exits 0 once caught up',
    )
    .requiredOption('--data <dir>', 'the directory of the mirror database (DIR/db)')
    .option('--follow', 'once caught up, keep polling for new changes until SIGINT or SIGTERM')
    .option('--size <n>', 'changes per page, 1 to 100 (default 100)', positiveInteger('a page size'))
    .option('--json', 'print {"applied", "cursor", "lagSeconds"} as JSON at the end')
    .action(async (options: SyncCommandOptions, command: Command) => {
      await runWithClient(command, { json: Boolean(options.json) }, (client) => sync(client, options))
    })
}

async function sync(client: EarshotClient, options: SyncCommandOptions): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`)
  const stopping = new AbortController()
  let stoppedBy: NodeJS.Signals | undefined
  const stop = (signal: NodeJS.Signals) => {
    stoppedBy ??= signal
    log(`${signal}: stopping`)
    stopping.abort()
  }
  const onSigint = () => stop('SIGINT')
  const onSigterm = () => stop('SIGTERM')
  process.once('SIGINT', onSigint)
  process.once('SIGTERM', onSigterm)
  try {
    const db = await openDatabase({ dataDir: join(options.data, 'db') })
    try {
      const mirror = await openChangeMirror(db, client.enterpriseId)
      let following = false
      let lagSeconds = 0
      const result = await syncChanges({
        client,
        mirror,
        size: options.size,
        follow: Boolean(options.follow),
        signal: stopping.signal,
        onPage(page) {
          const last = page.items.at(-1)
          if (last) log(`applied ${changes(page.items.length)} through seq ${last.seq}`)
          if (page.hasMore) return
          lagSeconds = page.lagSeconds
          if (options.follow && !following) {
            following = true
            log(`caught up${behind(lagSeconds)}; following the change feed`)
          }
        },
        onRetry(error, waitMs) {
          log(`warning: ${(error as Error).message}; polling again in ${(waitMs / 1000).toFixed(1)} s`)
        },
      })
      if (!options.follow && !result.caughtUp) {
        throw new CommandFailure(
          `${stoppedBy ?? 'stopped'} before catching up (applied ${changes(result.applied)}); ` +
            'run sync again to resume',
        )
      }
      if (options.json) return printJson({ applied: result.applied, cursor: result.cursor, lagSeconds })
      const [count] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM mirror_recordings')
      printLines(
        `${stoppedBy ? 'Stopped' : `Caught up${behind(lagSeconds)}`}: applied ${changes(result.applied)}; ` +
          `the mirror holds ${count?.n ?? 0} ${count?.n === 1 ? 'recording' : 'recordings'}.`,
      )
    } finally {
      await db.close()
    }
  } finally {
    process.off('SIGINT', onSigint)
    process.off('SIGTERM', onSigterm)
  }
}

const changes = (n: number) => `${n} ${n === 1 ? 'change' : 'changes'}`

/**
 * How far behind the feed may be: changes committed on the platform wait while an older transaction there
 * still runs (the feed's lagSeconds).
 */
const behind = (lagSeconds: number) =>
  lagSeconds >= 1
    ? ` with the feed (it may be up to ${Math.round(lagSeconds)} s behind: changes made on the platform wait while an older transaction there still runs)`
    : ''
