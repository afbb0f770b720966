import type { Options, SingleBar } from 'cli-progress'

/**
 * A progress bar on stderr, in cli-progress's classic shades. The library is loaded when a command first
 * shows one, so the many commands that never do start without it.
 */
export async function progressBar(options: Options): Promise<SingleBar> {
  const { default: cliProgress } = await import('cli-progress')
  return new cliProgress.SingleBar(options, cliProgress.Presets.shades_classic)
}
