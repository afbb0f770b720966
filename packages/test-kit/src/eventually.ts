/** Polls until check() returns a value other than undefined/false, or fails after timeoutMs. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** A promise and the function that resolves it: a gate a test opens, or an event it waits for. */
export function latch(): { done: Promise<void>; signal: () => void } {
  let signal: () => void = () => {}
  const done = new Promise<void>((resolve) => {
    signal = resolve
  })
  return { done, signal }
}
