import { Command } from 'commander'
import { environmentHelp, loadConfigOrExit, stopOnSignals } from './serve-command.js'

/** `earshot worker`: a push dispatcher without the APIs, beside `earshot serve` instances on PostgreSQL. */
export function workerCommand(): Command {
  return new Command('worker')
    .description('push deliveries to partners, without serving the APIs (scale pushes on PostgreSQL)')
    .option('--database-url <url>', 'the PostgreSQL the platform instances share (DATABASE_URL)')
    .option(
      '--data-dir <dir>',
      'embedded database directory, when no platform has it open (EARSHOT_DATA_DIR)',
    )
    .addHelpText('after', environmentHelp)
    .action(async (flags: { databaseUrl?: string; dataDir?: string }) => {
      const config = loadConfigOrExit({ databaseUrl: flags.databaseUrl, dataDir: flags.dataDir })
      const { startPushWorker } = await import('../dispatch/push-worker.js')
      const worker = await startPushWorker(config).catch((error: unknown) => {
        process.stderr.write(`earshot worker could not start: ${(error as Error).message}\n`)
        process.exit(1)
      })
      stopOnSignals(() => worker.close())
      process.stdout.write(`Earshot push worker ${worker.claimant} is running. Press Ctrl+C to stop.\n`)
    })
}
