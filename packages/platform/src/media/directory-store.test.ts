import assert from 'node:assert/strict'
import { mkdtemp, readdir, rm, utimes } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { after, describe, test } from 'node:test'
import { describeMediaStore } from '@earshot/test-kit/media-store-contract'
import { DirectoryStore } from './directory-store.js'

const roots: string[] = []
async function freshStore(): Promise<DirectoryStore> {
  const root = await mkdtemp(join(tmpdir(), 'earshot-media-test-'))
  roots.push(root)
  return new DirectoryStore(root)
}
after(() => Promise.all(roots.map((root) => rm(root, { recursive: true, force: true }))))

describeMediaStore('directory store', freshStore)

describe('directory store', { timeout: 30_000 }, () => {
  test('an unfinished upload leaves only a temporary file, which the sweep removes once old', async () => {
    const root = await mkdtemp(join(tmpdir(), 'earshot-media-test-'))
    roots.push(root)
    const store = new DirectoryStore(root)
    const cut = new Readable({ read() {} })
    cut.push(Buffer.alloc(1000))
    const put = store.put('7/abc', cut, { maxBytes: 10_000, contentType: 'audio/wav' })
    // The temporary file exists while the upload runs; a crash now would leave it behind.
    const partial = join(root, '.partial')
    let names: string[] = []
    while (names.length === 0) names = await readdir(partial).catch(() => [])
    const [name] = names as [string]
    assert.equal(await store.removeUnfinished(Date.now() - 60_000), 0, 'a recent upload is left alone')
    const old = new Date(Date.now() - 3_600_000)
    await utimes(join(partial, name), old, old)
    assert.equal(await store.removeUnfinished(Date.now() - 60_000), 1)
    cut.destroy(new Error('gone'))
    await assert.rejects(put, /gone/)
    assert.deepEqual(await readdir(partial), [])
  })

  test('refuses a key that could leave the directory', async () => {
    const store = await freshStore()
    await assert.rejects(
      store.put('../x', Readable.from([]), { maxBytes: 1, contentType: 'audio/wav' }),
      /not a media key/,
    )
  })
})
