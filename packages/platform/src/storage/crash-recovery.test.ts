import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { type ScratchDatabase, scratchPostgresDatabase, testBackends } from '@earshot/test-kit/backends'
import { type ChildPlatform, startChildPlatform } from '@earshot/test-kit/child-platform'
import type { Database } from './database.js'
import { openDatabase } from './open-database.js'

function jsonLines(prefix: string, count: number): string {
  const lines: string[] = []
  for (let i = 0; i < count; i++) {
    const recordedAt = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString()
    lines.push(
      JSON.stringify({
        audioId: `${prefix}-${i}`,
        deviceUid: `DEV-${i % 50}`,
        title: `recording ${i}`,
        recordedAt,
        denoiseUrl: `https://media.example/${prefix}/${i}.mp3`,
        recordDuration: 1000 + i,
      }),
    )
  }
  return `${lines.join('\n')}\n`
}

async function adminFetch(
  platform: ChildPlatform,
  method: string,
  path: string,
  body?: string,
  type?: string,
) {
  return fetch(`${platform.adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${platform.adminToken}`, ...(type && { 'content-type': type }) },
    ...(body !== undefined && { body }),
  })
}

async function countByPrefix(db: Database, enterpriseId: number, prefix: string): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'SELECT count(*) AS n FROM recordings WHERE enterprise_id = $1 AND audio_id LIKE $2',
    [enterpriseId, `${prefix}-%`],
  )
  return row?.n ?? -1
}

for (const backend of testBackends) {
  describe(`${backend}: kill -9 during a bulk import`, { timeout: 300_000 }, () => {
    const directory = mkdtempSync(join(tmpdir(), 'earshot-crash-'))
    let scratch: ScratchDatabase | undefined
    const children: ChildPlatform[] = []
    after(async () => {
      for (const child of children) child.process.kill('SIGKILL')
      await scratch?.drop()
      rmSync(directory, { recursive: true, force: true })
    })

    test('restarts on the same storage with every acknowledged recording; the killed import completes when run again', async () => {
      scratch = backend === 'postgres' ? await scratchPostgresDatabase() : undefined
      const env: Record<string, string> = scratch
        ? { DATABASE_URL: scratch.url }
        : { EARSHOT_DATA_DIR: join(directory, 'data') }
      const first = await startChildPlatform(env)
      children.push(first)

      const created = await adminFetch(
        first,
        'POST',
        '/enterprises',
        JSON.stringify({ name: 'Crash' }),
        'application/json',
      )
      const { enterpriseId } = (await created.json()) as { enterpriseId: number }

      const acknowledged = await adminFetch(
        first,
        'POST',
        `/enterprises/${enterpriseId}/recordings/import`,
        jsonLines('acked', 3000),
        'application/x-ndjson',
      )
      assert.match(await acknowledged.text(), /\{"imported":3000,"skipped":0\}\n$/)
      for (let i = 0; i < 20; i++) {
        const single = await adminFetch(
          first,
          'POST',
          `/enterprises/${enterpriseId}/recordings`,
          JSON.stringify({
            audioId: `single-${i}`,
            deviceUid: 'DEV-S',
            title: 's',
            recordedAt: '2026-05-01T00:00:00Z',
            denoiseUrl: 'https://cdn.example/u.mp3',
            recordDuration: 1,
          }),
          'application/json',
        )
        assert.equal(single.status, 201)
      }

      // A large import, killed once it is visibly under way.
      const interrupted = await adminFetch(
        first,
        'POST',
        `/enterprises/${enterpriseId}/recordings/import`,
        jsonLines('killed', 30_000),
        'application/x-ndjson',
      )
      const reader = (interrupted.body as ReadableStream<Uint8Array>).getReader()
      let seen = ''
      while (!/"progress":[1-9]/.test(seen)) {
        const { value, done } = await reader.read()
        if (done) break
        seen += Buffer.from(value).toString()
      }
      assert.doesNotMatch(seen, /imported/, 'the import must still be running when the process is killed')
      first.process.kill('SIGKILL')
      assert.equal(await first.exited, 'SIGKILL')
      await reader.cancel().catch(() => {})

      // The restarted platform opens the same storage (taking over the dead process's lock) and serves;
      // the chunks committed before the kill stay, and the same file again imports the rest.
      const second = await startChildPlatform(env)
      children.push(second)
      const listed = await adminFetch(second, 'GET', '/enterprises')
      assert.equal(listed.status, 200)
      const completed = await adminFetch(
        second,
        'POST',
        `/enterprises/${enterpriseId}/recordings/import`,
        jsonLines('killed', 30_000),
        'application/x-ndjson',
      )
      const summary = JSON.parse((await completed.text()).trim().split('\n').at(-1) as string)
      assert.ok(summary.skipped > 0, 'the chunks committed before the kill are skipped')
      assert.equal(summary.imported + summary.skipped, 30_000)
      second.process.kill('SIGTERM')
      assert.equal(await second.exited, 0)

      const db = await openDatabase({ databaseUrl: scratch?.url, dataDir: join(directory, 'data') })
      try {
        assert.equal(await countByPrefix(db, enterpriseId, 'acked'), 3000)
        assert.equal(await countByPrefix(db, enterpriseId, 'single'), 20)
        assert.equal(await countByPrefix(db, enterpriseId, 'killed'), 30_000)
      } finally {
        await db.close()
      }
    })
  })
}
