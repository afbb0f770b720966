import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Envelope, loadKey, open, PushEvent, seal } from '@earshot/protocol'

/** A partner's push endpoint for tests: a real HTTP server on loopback that decrypts every push. */
export interface ReceivedPush {
  headerEventId: string | undefined
  envelope: Envelope
  event: PushEvent
  /** performance.now() when the push arrived. */
  at: number
}

export type PushAnswer =
  | { status: number; body: unknown }
  /** Never answers: the platform's timeout must end the attempt. */
  | 'hang'

export interface ReceiverBehaviour {
  /** The answer to the n-th push (0-based); default `{"code":2000}`. */
  answer?(push: ReceivedPush, n: number): PushAnswer | Promise<PushAnswer>
  /** Called after an answer went out, like a partner starting its receipt callback after a 2000. */
  afterAnswer?(push: ReceivedPush, answer: { status: number; body: unknown }): void
}

export interface TestReceiver {
  url: string
  received: ReceivedPush[]
  /** Stops listening (pushes then fail to connect) until start() listens again on the same port. */
  stop(): Promise<void>
  start(): Promise<void>
  close(): Promise<void>
}

export async function startTestReceiver(
  secret: string,
  behaviour: ReceiverBehaviour = {},
): Promise<TestReceiver> {
  const key = loadKey(secret)
  const received: ReceivedPush[] = []
  const hanging = new Set<ServerResponse>()
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    let push: ReceivedPush
    try {
      const opened = open(JSON.parse(Buffer.concat(chunks).toString('utf8')), key)
      const header = request.headers['x-earshot-event-id']
      push = {
        headerEventId: Array.isArray(header) ? header[0] : header,
        envelope: opened.envelope,
        event: PushEvent.parse(opened.plaintext),
        at: performance.now(),
      }
    } catch (error) {
      response.writeHead(400, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ code: 4000, msg: (error as Error).message }))
      return
    }
    const n = received.length
    received.push(push)
    const answer = (await behaviour.answer?.(push, n)) ?? { status: 200, body: { code: 2000 } }
    if (answer === 'hang') {
      hanging.add(response)
      return
    }
    response.writeHead(answer.status, { 'content-type': 'application/json' })
    response.end(JSON.stringify(answer.body), () => behaviour.afterAnswer?.(push, answer))
  }

  let server: Server | undefined
  let port = 0
  const start = async () => {
    const next = createServer((request, response) => {
      handle(request, response).catch(() => response.destroy())
    })
    await new Promise<void>((resolve) => next.listen(port, '127.0.0.1', resolve))
    port = (next.address() as AddressInfo).port
    server = next
  }
  const stop = async () => {
    for (const response of hanging) response.destroy()
    hanging.clear()
    const current = server
    server = undefined
    if (!current) return
    current.closeAllConnections()
    await new Promise<void>((resolve) => current.close(() => resolve()))
  }
  await start()
  return { url: `http://127.0.0.1:${port}/earshot/push`, received, start, stop, close: stop }
}

/**
 * The partner's receipt callback, retried every 100 ms until the platform answers
 * 2000 — as a partner must, since the platform may be restarting. `baseUrl` is read on each try.
 */
export function callbackSender(
  baseUrl: () => string,
  credentials: { enterpriseId: number; keyVersion: number; secret: string },
): (audioId: string) => Promise<void> {
  const key = loadKey(credentials.secret)
  let token: string | undefined
  let counter = 0
  const post = async (path: string, body: unknown, bearer?: string) => {
    const response = await fetch(`${baseUrl()}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(bearer && { authorization: `Bearer ${bearer}` }) },
      body: JSON.stringify(body),
    })
    return (await response.json()) as { code: number; data?: { accessToken: string } }
  }
  const once = async (audioId: string): Promise<boolean> => {
    if (!token) {
      const reply = await post('/openapi/v1/token', {
        ...seal(key, credentials.keyVersion, `cb-token-${++counter}`, {}),
        enterpriseId: credentials.enterpriseId,
      })
      if (reply.code !== 2000) return false
      token = reply.data?.accessToken
    }
    const reply = await post(
      '/openapi/v1/callback',
      seal(key, credentials.keyVersion, `cb-${++counter}`, { audioId }),
      token,
    )
    if (reply.code === 4010 || reply.code === 4011) token = undefined
    return reply.code === 2000
  }
  return async (audioId) => {
    for (;;) {
      if (await once(audioId).catch(() => false)) return
      // Unref'd: a callback still retrying once its test stopped the platform does not keep the process alive.
      await new Promise((resolve) => setTimeout(resolve, 100).unref())
    }
  }
}
