import type { Server, ServerResponse } from 'node:http'

export interface WriteLimits {
  /** How long bytes may wait for a reader that takes fewer than minBytesPerSecond of them. */
  timeoutMs: number
  minBytesPerSecond: number
}

/** Since when an answer has had bytes waiting for its reader, and how many it had taken by then. */
interface Waiting {
  since: number
  taken: number
}

/**
 * Closes the connection of an answer whose reader stopped reading, or reads too slowly: while bytes of the
 * answer wait for the reader (the kernel's buffers are full), it must take at least max(1,
 * minBytesPerSecond × elapsed) of them in each timeoutMs, else onCut is told and the socket destroyed,
 * which frees it from the connection caps. Node's own timeouts bound only how long a request takes to
 * arrive: without this, a download never read held an active connection for as long as its client liked.
 * An answer waiting for its own source (a slow store) has no bytes waiting, so is never cut.
 */
export function watchWrites(
  server: Server,
  limits: WriteLimits,
  onCut: (response: ServerResponse) => void,
): void {
  const answers = new Map<ServerResponse, Waiting | undefined>()
  server.prependListener('request', (_request, response: ServerResponse) => {
    answers.set(response, undefined)
    response.once('close', () => answers.delete(response))
  })
  const check = () => {
    const now = performance.now()
    for (const [response, waiting] of answers) {
      const socket = response.socket
      if (!socket || socket.destroyed || socket.writableLength === 0) {
        answers.set(response, undefined)
        continue
      }
      // Bytes whose write completed: the kernel took them from the socket's buffer.
      const taken = (socket.bytesWritten ?? 0) - socket.writableLength
      if (!waiting) {
        answers.set(response, { since: now, taken })
        continue
      }
      const elapsed = now - waiting.since
      if (elapsed < limits.timeoutMs) continue
      if (taken - waiting.taken < Math.max(1, (limits.minBytesPerSecond * elapsed) / 1000)) {
        answers.delete(response)
        onCut(response)
        socket.destroy()
      } else {
        answers.set(response, { since: now, taken })
      }
    }
  }
  // As for Node's own timeouts (create-server.ts): checked every quarter of the limit.
  const timer = setInterval(check, Math.max(1, Math.round(limits.timeoutMs / 4)))
  timer.unref()
  server.once('close', () => clearInterval(timer))
}
