import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { isIPv6, type Socket } from 'node:net'

export interface ConnectionCaps {
  /** Connections a listener serves at once. */
  total: number
  /** Connections one client address (an IPv6 client's /64) may hold at once; 0: no cap per client. */
  perClient: number
}

/** Why a connection is refused: its first request is answered 503 (5030) with the reason, then it closes. */
export type Refusal = 'client' | 'total'

/** Once this share of the total cap is taken, each new connection closes the longest idle one first. */
const IDLE_EVICTION_SHARE = 0.9
/** Idle connections closed per new connection near the cap: more than one, so that the room grows back. */
const EVICTIONS_PER_CONNECTION = 2
/** A refused connection is closed this long after it was accepted, answered or not. */
const REFUSED_LINGER_MS = 5000

interface Tracked {
  client: string
  /** Requests of the connection not yet answered. */
  active: number
  refused?: Refusal
  /** Stops counting an admitted connection. */
  release?: () => void
}

/** Connections counted per client address, and in all. */
class Counts {
  private readonly byClient = new Map<string, number>()
  all = 0

  of(client: string): number {
    return this.byClient.get(client) ?? 0
  }

  /** Counts the socket until it closes, or until the function returned is called (once). */
  hold(client: string, socket: Socket): () => void {
    this.all++
    this.byClient.set(client, this.of(client) + 1)
    let held = true
    const release = () => {
      if (!held) return
      held = false
      this.all--
      const left = this.of(client) - 1
      if (left === 0) this.byClient.delete(client)
      else this.byClient.set(client, left)
    }
    socket.once('close', release)
    return release
  }
}

/**
 * Caps a listener's connections in total and per client address, so that no client can hold the door
 * shut: a client over its cap, or any client once the total is reached, has its connection answered 503
 * with code 5030 (refused(): the server's first hook answers it) and closed within REFUSED_LINGER_MS,
 * rather than closed unanswered. Refused connections lingering are capped the same way; past that, a
 * client still opening more has them closed at once. Near the total cap, idle keep-alive connections are
 * closed first, longest idle first, to make room. Behind a reverse proxy every client has the proxy's
 * address: there the per-client cap is the proxy's job.
 */
export class ConnectionGuard {
  private readonly tracked = new WeakMap<Socket, Tracked>()
  private readonly admitted = new Counts()
  private readonly lingering = new Counts()
  /**
   * Admitted connections without a request in progress (or not yet a whole request's headers), longest
   * idle first (a Map keeps insertion order), each with the function that stops counting it.
   */
  private readonly idle = new Map<Socket, () => void>()

  constructor(
    server: Server,
    private readonly caps: ConnectionCaps,
  ) {
    // Node closes connections beyond this unanswered: the last resort, past admitted and lingering ones.
    server.maxConnections = 2 * caps.total + 1
    server.prependListener('connection', (socket: Socket) => this.connected(socket))
    server.prependListener('request', (request: IncomingMessage, response: ServerResponse) =>
      this.requested(request.socket, response),
    )
  }

  /** Why the connection is refused, if it is. */
  refused(socket: Socket): Refusal | undefined {
    return this.tracked.get(socket)?.refused
  }

  private connected(socket: Socket): void {
    const client = clientOf(socket.remoteAddress)
    if (this.admitted.all >= this.caps.total * IDLE_EVICTION_SHARE) this.evictIdle()
    const refused = this.refusal(client, this.admitted)
    const tracked: Tracked = { client, active: 0, ...(refused && { refused }) }
    this.tracked.set(socket, tracked)
    if (!refused) {
      const release = this.admitted.hold(client, socket)
      this.idle.set(socket, release)
      socket.once('close', () => this.idle.delete(socket))
      tracked.release = release
      return
    }
    if (this.refusal(client, this.lingering)) {
      socket.destroy()
      return
    }
    this.lingering.hold(client, socket)
    const timer = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS)
    socket.once('close', () => clearTimeout(timer))
  }

  private refusal(client: string, counts: Counts): Refusal | undefined {
    if (this.caps.perClient > 0 && counts.of(client) >= this.caps.perClient) return 'client'
    return counts.all >= this.caps.total ? 'total' : undefined
  }

  private requested(socket: Socket, response: ServerResponse): void {
    const tracked = this.tracked.get(socket)
    if (!tracked || tracked.refused) return
    tracked.active++
    this.idle.delete(socket)
    response.once('close', () => {
      tracked.active--
      if (tracked.active === 0 && !socket.destroyed && tracked.release) this.idle.set(socket, tracked.release)
    })
  }

  private evictIdle(): void {
    let evicted = 0
    for (const [socket, release] of this.idle) {
      if (evicted === EVICTIONS_PER_CONNECTION) return
      this.idle.delete(socket)
      release()
      socket.destroy()
      evicted++
    }
  }
}

/** A client's address as capped: an IPv4 address, or an IPv6 address's /64 (one host often has the whole /64). */
export function clientOf(address: string | undefined): string {
  if (address === undefined) return 'unknown'
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1]
  if (mapped) return mapped
  if (!isIPv6(address)) return address
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`
}

function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.split('::') as [string, string | undefined]
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const zeros = Array.from({ length: 8 - left.length - right.length }, () => '0')
  return [...left, ...(tail === undefined ? [] : zeros), ...right].map((group) => group.toLowerCase())
}
