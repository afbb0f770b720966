/**
 * The push half of a delivery's floor (push-cost.bench.ts): `count` pushes sealed as the platform seals
 * them and POSTed on bare node:http to a receiver, at most `inFlight` at once over keep-alive connections,
 * each answer read to its end. No claim, no state, no retry: what sending a push costs and nothing else.
 */
import { randomUUID } from 'node:crypto'
import { Agent, request } from 'node:http'
import { type EnvelopeKey, seal } from '@earshot/protocol'

export interface FloorPushes {
  /** The receiver's push URL. */
  url: string
  enterpriseId: number
  keyVersion: number
  count: number
  inFlight: number
}

/** A `recording.audio_ready` event the size and shape of the platform's for a bench recording. */
function pushEvent(enterpriseId: number, i: number) {
  const audioId = randomUUID()
  return {
    eventId: randomUUID(),
    eventType: 'recording.audio_ready',
    enterpriseId,
    audioId,
    occurredAt: new Date().toISOString(),
    recording: {
      audioId,
      deviceUid: `bench-device-${i % 100}`,
      title: `Floor bench ${i}`,
      recordedAt: new Date(Date.UTC(2025, 5, 1) + i * 1000).toISOString(),
      recordDuration: 60_000,
      denoiseUrl: `https://cdn.example.com/bench/floor/${i}.wav`,
      audioUrl: `https://media.example.com/audio/${audioId}?expires=1767225600&signature=${'0'.repeat(64)}`,
    },
  }
}

function post(agent: Agent, url: URL, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    })
    outgoing.on('error', reject)
    outgoing.on('response', (response) => {
      response.on('data', () => {})
      response.on('end', () =>
        response.statusCode === 200 ? resolve() : reject(new Error(`push answered ${response.statusCode}`)),
      )
    })
    outgoing.end(body)
  })
}

/** Sends the pushes; resolves once every one is answered 200. */
export async function sendFloorPushes(pushes: FloorPushes, key: EnvelopeKey): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: pushes.inFlight })
  const url = new URL(pushes.url)
  let next = 0
  const worker = async () => {
    while (next < pushes.count) {
      const event = pushEvent(pushes.enterpriseId, next++)
      await post(agent, url, JSON.stringify(seal(key, pushes.keyVersion, event.eventId, event)))
    }
  }
  try {
    await Promise.all(Array.from({ length: pushes.inFlight }, worker))
  } finally {
    agent.destroy()
  }
}
