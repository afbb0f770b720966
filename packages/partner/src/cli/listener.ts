import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { httpStatusOf, ResponseCode } from '@earshot/protocol'

/** What answers pushes once open (the receiver with its database), and how to close it. */
export interface ReceiverParts {
  handler(request: IncomingMessage, response: ServerResponse): void
  close(): Promise<void>
}

export interface ListenerOptions {
  host: string
  port: number
  /** The push path; any other path is answered 4040. */
  path: string
  /** Connections still open this long after stop() are cut; default 5 s. */
  shutdownGraceMs?: number
}

export interface Listener {
  /** Where pushes go: http://host:port/path. */
  url: string
  /** Never resolves; rejects when the receiver could not be opened after the port was bound. */
  failed: Promise<never>
  /** Stops taking connections, lets those open finish (cut after the grace), then closes the receiver. */
  stop(): Promise<void>
}

const DEFAULT_SHUTDOWN_GRACE_MS = 5000

/**
 * Binds the port first and opens the receiver behind it. PGlite's first start in a fresh data directory
 * (its initdb) takes seconds, so the port listens at once and a push arriving meanwhile waits for the
 * receiver: it is answered, as always, only once stored. Should the receiver fail to open, the pushes
 * waiting are answered 5030 (the platform pushes them again) and `failed` rejects.
 */
export async function startListener(
  options: ListenerOptions,
  open: () => Promise<ReceiverParts>,
): Promise<Listener> {
  const opening = open()
  const failed = opening.then(() => new Promise<never>(() => {}))
  failed.catch(() => {}) // the caller hears of it through `failed`
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?', 1)[0] ?? ''
    if (path !== options.path)
      return answer(request, response, ResponseCode.NOT_FOUND, `no push endpoint at ${path}`)
    opening.then(
      (parts) => parts.handler(request, response),
      () => answer(request, response, ResponseCode.UNAVAILABLE, 'the receiver could not open its database'),
    )
  })
  const closeReceiver = () =>
    opening.then(
      (parts) => parts.close(),
      () => {},
    )
  try {
    // A refusal the receiver knows at once (its data directory locked by another process) wins the race.
    await Promise.race([bind(server, options.port, options.host), failed])
  } catch (error) {
    server.close()
    await closeReceiver()
    throw error
  }
  const { port } = server.address() as AddressInfo
  const host = options.host.includes(':') ? `[${options.host}]` : options.host
  return {
    url: `http://${host}:${port}${options.path}`,
    failed,
    async stop() {
      server.closeIdleConnections()
      const cut = setTimeout(
        () => server.closeAllConnections(),
        options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS,
      )
      await new Promise((resolve) => server.close(resolve))
      clearTimeout(cut)
      await closeReceiver()
    },
  }
}

async function bind(server: Server, port: number, host: string): Promise<void> {
  server.listen(port, host)
  await Promise.race([
    once(server, 'listening'),
    once(server, 'error').then(([error]) => Promise.reject(error)),
  ])
}

function answer(request: IncomingMessage, response: ServerResponse, code: number, msg: string): void {
  request.resume()
  response
    .writeHead(httpStatusOf(code), { 'content-type': 'application/json' })
    .end(JSON.stringify({ code, msg }))
}
