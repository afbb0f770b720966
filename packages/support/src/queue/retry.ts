export interface RetryOptions {
  /** Spread of each delay: 0.1 is ±10%. */
  jitter?: number
  /** Past the end of the schedule, its last delay again (instead of no more retries). */
  repeatLast?: boolean
}

/**
 * The delay (in the schedule's unit) before the attempt that follows `failures` failed ones in a row,
 * with jitter from `random` (uniform in [0, 1)); undefined once the schedule is exhausted.
 */
export function retryDelay(
  schedule: readonly number[],
  failures: number,
  random: () => number,
  { jitter = 0.1, repeatLast = false }: RetryOptions = {},
): number | undefined {
  const step = schedule[failures] ?? (repeatLast ? schedule.at(-1) : undefined)
  if (step === undefined) return undefined
  return step * (1 + jitter * (random() * 2 - 1))
}
