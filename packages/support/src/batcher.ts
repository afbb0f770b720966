export interface BatcherOptions {
  /** Items per batch at most. Default 256. */
  maxBatch?: number
  /** Batches run at once: 1 for PGlite (one connection), a few for a PostgreSQL pool. Default 1. */
  parallel?: number
}

/**
 * Group commit: the calls made in one turn of the event loop, and those made while a batch runs, are run
 * together as the next batch, so that many concurrent requests cost one statement instead of one each.
 * `run` must return one result per item, in order; when it throws, every caller of that batch gets the
 * error. A caller's promise settles only once its batch has settled.
 */
export function batcher<In, Out>(
  run: (items: In[]) => Promise<Out[]>,
  { maxBatch = 256, parallel = 1 }: BatcherOptions = {},
): (item: In) => Promise<Out> {
  let queue: { item: In; resolve: (out: Out) => void; reject: (error: unknown) => void }[] = []
  let running = 0
  let scheduled = false

  const start = () => {
    scheduled = false
    while (running < parallel && queue.length > 0) {
      const batch = queue.length <= maxBatch ? queue : queue.slice(0, maxBatch)
      queue = queue.length <= maxBatch ? [] : queue.slice(maxBatch)
      running++
      run(batch.map((entry) => entry.item))
        .then(
          (results) => {
            batch.forEach((entry, i) => {
              entry.resolve(results[i] as Out)
            })
          },
          (error: unknown) => {
            for (const entry of batch) entry.reject(error)
          },
        )
        .finally(() => {
          running--
          schedule()
        })
    }
  }

  // setImmediate, not a microtask: requests whose bytes arrived in this turn of the event loop are all
  // read first (PGlite runs a statement without yielding, so nothing arrives during one).
  const schedule = () => {
    if (scheduled || running >= parallel || queue.length === 0) return
    scheduled = true
    setImmediate(start)
  }

  return (item) =>
    new Promise<Out>((resolve, reject) => {
      queue.push({ item, resolve, reject })
      schedule()
    })
}
