/**
 * Child process of `cpu.bench.ts`: the platform of `bench-server.ts` (seeded the same way, from
 * BENCH_SERVER_SPEC), which profiles itself when asked (child-profiler.ts), into BENCH_CPU_PROFILE.
 */ import { answerProfileRequests } from './child-profiler.js'

answerProfileRequests(process.env.BENCH_CPU_PROFILE ?? '.')

await import('./bench-server.js')
