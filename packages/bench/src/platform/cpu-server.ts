/**
 * Child process of `cpu.bench.ts`: the platform of `bench-server.ts` (seeded the same way, from
 * BENCH_SERVER_SPEC), which can also profile itself. "profile-start" starts V8's CPU profiler on the main
 * thread (the sampler of `--cpu-prof`, started through the inspector so that only the run profiled is in
 * the profile, not the seeding); "profile-stop" writes the profile to BENCH_CPU_PROFILE and answers its path.
 */
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'
import type { ProfileWritten } from './media-platform.js'

let profiles = 0
let session: Session | undefined
process.on('message', async (message: { type?: string }) => {
  if (message.type === 'profile-start') {
    session = new Session()
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 1000 })
    await session.post('Profiler.start')
    process.send?.({ type: 'profiling' })
  } else if (message.type === 'profile-stop' && session) {
    const { profile } = await session.post('Profiler.stop')
    session.disconnect()
    session = undefined
    const path = join(
      process.env.BENCH_CPU_PROFILE ?? '.',
      `platform-${process.pid}-${++profiles}.cpuprofile`,
    )
    writeFileSync(path, JSON.stringify(profile))
    process.send?.({ type: 'profiled', path } satisfies ProfileWritten)
  }
})

await import('./bench-server.js')
