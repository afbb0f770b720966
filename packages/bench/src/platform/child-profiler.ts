import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'
import { integerSetting } from '../bench-support.js'

/** The answer to "profile-stop": where the profile was written. */
export interface ProfileWritten {
  type: 'profiled'
  path: string
}

/**
 * Lets a bench child profile itself on its parent's word: "profile-start" starts V8's CPU profiler on the
 * main thread (the sampler of `--cpu-prof`, started through the inspector so that only the run profiled is
 * in the profile, not the start-up or seeding); "profile-stop" writes it to `dir` and answers its path.
 */
export function answerProfileRequests(dir: string): void {
  // Finer than the default 1 ms shows more of short requests, at the cost of slowing them while profiled.
  const samplingMicros = integerSetting('BENCH_PROFILE_INTERVAL_US', 1000)
  let profiles = 0
  let session: Session | undefined
  process.on('message', async (message: { type?: string }) => {
    if (message.type === 'profile-start') {
      session = new Session()
      session.connect()
      await session.post('Profiler.enable')
      await session.post('Profiler.setSamplingInterval', { interval: samplingMicros })
      await session.post('Profiler.start')
      process.send?.({ type: 'profiling' })
    } else if (message.type === 'profile-stop' && session) {
      const { profile } = await session.post('Profiler.stop')
      session.disconnect()
      session = undefined
      const path = join(dir, `platform-${process.pid}-${++profiles}.cpuprofile`)
      writeFileSync(path, JSON.stringify(profile))
      process.send?.({ type: 'profiled', path } satisfies ProfileWritten)
    }
  })
}
