import { ResponseCode } from '@earshot/protocol'
import { ApiError } from './api-error.js'

/** One cap a piece of work counts against: its key, how many may run under it, and the refusal past it. */
export interface Cap {
  key: string
  max: number
  refusal: (max: number) => string
}

/**
 * Work in progress on this instance, counted under several keys at once (a link, its enterprise, all):
 * past any key's cap, new work is refused with 4290 and Retry-After.
 */
export class InFlight {
  private readonly counts = new Map<string, number>()

  constructor(private readonly retryAfterSeconds: number) {}

  /** Counts the work under every cap, or throws 4290 naming the first cap it is at; call the result once done. */
  take(caps: readonly Cap[]): () => void {
    const full = caps.find((cap) => (this.counts.get(cap.key) ?? 0) >= cap.max)
    if (full) {
      throw new ApiError(ResponseCode.RATE_LIMITED, full.refusal(full.max), {
        'retry-after': String(this.retryAfterSeconds),
      })
    }
    for (const { key } of caps) this.counts.set(key, (this.counts.get(key) ?? 0) + 1)
    let held = true
    return () => {
      if (!held) return
      held = false
      for (const { key } of caps) {
        const left = (this.counts.get(key) ?? 1) - 1
        if (left === 0) this.counts.delete(key)
        else this.counts.set(key, left)
      }
    }
  }
}
