/** A JSON Lines import through the admin client, its body generated as it is sent (never held whole). */
import type { AdminClient, ImportLine } from '@earshot/platform/admin-client'

/** Recordings of 50 devices, one a second from 2025-01-01T00:00:00Z. */
async function* jsonLines(count: number): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder()
  const start = Date.UTC(2025, 0, 1)
  for (let from = 0; from < count; from += 1000) {
    let text = ''
    for (let i = from; i < Math.min(from + 1000, count); i++) {
      text += `${JSON.stringify({
        deviceUid: `feed-device-${i % 50}`,
        title: `Feed bench ${i}`,
        recordedAt: new Date(start + i * 1000).toISOString(),
        denoiseUrl: `https://cdn.example.com/feed/${i}.wav`,
        recordDuration: 60_000,
      })}\n`
    }
    yield encoder.encode(text)
  }
}

/** The device whose recordings the lines spread evenly; a window of a year holds all of them. */
export const IMPORTED_DEVICE = 'feed-device-7'
export const IMPORTED_YEAR = { startTime: '2025-01-01T00:00:00Z', endTime: '2026-01-01T00:00:00Z' } as const

/** Imports `count` lines in one streamed request; the seconds it took, to its last progress line. */
export async function importLines(admin: AdminClient, enterpriseId: number, count: number): Promise<number> {
  const started = performance.now()
  let last: ImportLine | undefined
  for await (const line of admin.importRecordings(enterpriseId, jsonLines(count))) last = line
  if (last === undefined || !('imported' in last) || last.imported !== count) {
    throw new Error(`import failed: ${JSON.stringify(last ?? null).slice(0, 300)}`)
  }
  return (performance.now() - started) / 1000
}
