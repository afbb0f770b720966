import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { startTestPlatform, type TestPlatform } from '@earshot/test-kit/backends'
import { admin, createPartner } from '@earshot/test-kit/calls'

let platform: TestPlatform
before(async () => {
  // Long enough for the whole import below to finish during shutdown, on a slow machine too.
  platform = await startTestPlatform('pglite', { shutdownGraceSeconds: 120 })
})
after(() => platform.stop())

test('shutdown finishes a request in flight and refuses new ones with 5030', {
  timeout: 180_000,
}, async () => {
  const partner = await createPartner(platform)
  const lines = Array.from({ length: 20_000 }, (_, i) =>
    JSON.stringify({
      audioId: `s-${i}`,
      deviceUid: 'D',
      title: 't',
      recordedAt: '2026-01-01T00:00:00Z',
      denoiseUrl: 'https://cdn.example/u.mp3',
      recordDuration: 1,
    }),
  ).join('\n')
  const response = await fetch(
    `${platform.adminUrl}/admin/v1/enterprises/${partner.enterpriseId}/recordings/import`,
    {
      method: 'POST',
      headers: { authorization: `Bearer ${platform.adminToken}`, 'content-type': 'application/x-ndjson' },
      body: lines,
    },
  )
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  let text = Buffer.from((await reader.read()).value ?? []).toString()

  const closing = platform.close()
  const refused = await fetch(`${platform.partnerUrl}/openapi/v1/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  }).then(
    async (reply) => ({ status: reply.status, body: (await reply.json()) as { code: number } }),
    () => undefined, // the listener may already have stopped accepting connections
  )
  if (refused) assert.deepEqual([refused.status, refused.body.code], [503, 5030])

  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
    text += Buffer.from(chunk.value).toString()
  assert.match(text, /\{"imported":20000,"skipped":0\}\n$/, 'the in-flight import completes')
  await closing
})

test('admin refuses requests without the admin token', { timeout: 60_000 }, async () => {
  const fresh = await startTestPlatform('pglite')
  try {
    const response = await fetch(`${fresh.adminUrl}/admin/v1/enterprises`)
    assert.equal(response.status, 401)
    assert.equal(((await response.json()) as { code: number }).code, 4010)
    assert.equal((await admin(fresh, 'GET', '/enterprises')).status, 200)
  } finally {
    await fresh.stop()
  }
})
