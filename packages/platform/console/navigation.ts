/** Moving between the console's pages: hash routes, and the one timer a page may refresh itself by. */

let refreshTimer: ReturnType<typeof setTimeout> | undefined

/** Runs fn after ms, unless the operator navigates first (one page refreshes at a time). */
export function refreshLater(fn: () => unknown, ms: number): void {
  clearTimeout(refreshTimer)
  refreshTimer = setTimeout(fn, ms)
}

export function stopRefreshing(): void {
  clearTimeout(refreshTimer)
}

/** Goes to a hash route; to the one shown, it renders it again. */
export function navigate(hash: string): void {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'))
  else location.hash = hash
}
