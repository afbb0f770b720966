import assert from 'node:assert/strict'
import { rm } from 'node:fs/promises'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { runCli } from './run-cli.js'
import { scratchTree } from './scratch-tree.js'

/**
 * scripts/check-table-owners.mjs, run by `npm run lint`, on trees of its own: SQL in one feature that writes
 * another's table, or reads it without a listed reason, fails it; the owner's own SQL passes.
 */

const script = fileURLToPath(new URL('../../../scripts/check-table-owners.mjs', import.meta.url))

const tree = (files: Record<string, string>) => scratchTree('earshot-table-owners-', files)

test("a feature's SQL on another feature's table fails the check; the owner's passes", {
  timeout: 60_000,
}, async () => {
  const owned = "export const sql = 'UPDATE deliveries SET state = $1'\n"
  const crossed = await tree({
    'packages/platform/src/deliveries/delivery-store.ts': owned,
    'packages/platform/src/console/overview.ts': "export const sql = 'SELECT count(*) FROM deliveries'\n",
    'packages/platform/src/receipts/confirm.ts': "export const sql = 'UPDATE deliveries SET state = $1'\n",
  })
  const alone = await tree({ 'packages/platform/src/deliveries/delivery-store.ts': owned })
  try {
    const failed = await runCli(script, [crossed], {})
    assert.equal(failed.code, 1, failed.stdout)
    assert.match(failed.stderr, /console\/overview\.ts reads deliveries, which deliveries\/ owns/)
    assert.match(failed.stderr, /receipts\/confirm\.ts writes deliveries, which deliveries\/ owns/)
    const passed = await runCli(script, [alone], {})
    assert.equal(passed.code, 0, passed.stderr)
    assert.match(passed.stdout, /^check-table-owners: 0 reads/)
  } finally {
    await rm(crossed, { recursive: true, force: true })
    await rm(alone, { recursive: true, force: true })
  }
})
