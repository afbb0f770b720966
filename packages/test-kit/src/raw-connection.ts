import { once } from 'node:events'
import { connect, type Socket } from 'node:net'

/**
 * A plain TCP connection to a listener, for requests no HTTP client would send: a body that stops
 * half-way, headers that never end, one connection too many. Everything waits on socket events.
 */
export class RawConnection {
  private text = ''
  private waiting: (() => void)[] = []
  /** Resolves when the connection is closed, by either side. */
  readonly closed: Promise<void>

  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      this.text += chunk
      this.wake()
    })
    // A reset by the server is seen as the close that follows it.
    socket.on('error', () => {})
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.wake()
        resolve()
      }),
    )
  }

  /** Connects to the host and port of a listener's URL, from localAddress if given (e.g. 127.0.0.2). */
  static async open(url: string, localAddress?: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url)
    const socket = connect({ port: Number(port), host: hostname, ...(localAddress && { localAddress }) })
    await once(socket, 'connect')
    return new RawConnection(socket)
  }

  /** Everything received so far. */
  get received(): string {
    return this.text
  }

  send(text: string): void {
    this.socket.write(text)
  }

  /** Waits until the received text includes `expected`; fails if the connection closes first. */
  async receive(expected: string): Promise<void> {
    while (!this.text.includes(expected)) {
      if (this.socket.destroyed) {
        throw new Error(`closed before ${JSON.stringify(expected)} arrived; got ${JSON.stringify(this.text)}`)
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    }
  }

  close(): Promise<void> {
    this.socket.destroy()
    return this.closed
  }

  private wake(): void {
    const waiting = this.waiting
    this.waiting = []
    for (const resolve of waiting) resolve()
  }
}
