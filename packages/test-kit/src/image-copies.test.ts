import assert from 'node:assert/strict'
import { before, describe, test } from 'node:test'
import { openPglite, type Queryable } from '@earshot/support/storage'
import { lendImageCopy } from './image-copies.js'
import { preparePglite } from './pglite-image.js'

/**
 * A copy of the migrated image given back by one platform and lent to the next holds what a new copy holds:
 * the same rows, sequence values and settings, and nothing of the session before it.
 */

/** Every table's rows and every sequence's value, as text to compare. */
async function contents(db: Queryable): Promise<Map<string, string>> {
  const relations = await db.query<{ name: string; kind: string }>(
    `SELECT c.oid::regclass::text AS name, c.relkind::text AS kind
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'p', 'S') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
       AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1`,
  )
  const seen = new Map<string, string>()
  for (const { name, kind } of relations) {
    const [row] = await db.query<{ rows: string }>(
      kind === 'S'
        ? `SELECT concat_ws(',', last_value, is_called) AS rows FROM ${name}`
        : `SELECT coalesce(json_agg(t ORDER BY t::text)::text, '') AS rows FROM ${name} t`,
    )
    seen.set(`${kind} ${name}`, row?.rows ?? '')
  }
  return seen
}

/** The next transaction's number, which tells one database from another here. */
const transactionNumber = async (db: Queryable) =>
  Number((await db.query<{ xid: string }>('SELECT txid_current()::text AS xid'))[0]?.xid)

describe('copies of the migrated image lent to test platforms', { timeout: 120_000 }, () => {
  let image: string
  /** What a new copy holds (one opened here, not lent). */
  let fresh: Map<string, string>

  before(async () => {
    image = (await preparePglite({ databaseUrl: undefined, dataDir: 'memory://' })) as string
    const db = await openPglite(undefined, { image })
    fresh = await contents(db)
    await db.close()
  })

  test('one given back after rows, sequences, settings, a temporary table, a lock and a listener is lent as new', async () => {
    const used = await lendImageCopy(image)
    const heard: string[] = []
    await used.listen('earlier', (payload) => heard.push(payload))
    for (const relation of fresh.keys()) {
      const [kind, name] = relation.split(' ')
      if (kind === 'S') await used.query('SELECT nextval($1::regclass)', [name])
      else await used.query(`DELETE FROM ${name}`) // the image's own rows, where it has any
    }
    await used.query(`INSERT INTO enterprises (name) VALUES ('Reset')`)
    await used.query('ANALYZE')
    await used.query('SET statement_timeout = 1234')
    await used.query('CREATE TEMP TABLE scratch (x int)')
    await used.query('SELECT pg_advisory_lock(42)')
    assert.notDeepEqual(await contents(used), fresh)
    const lastUsed = await transactionNumber(used)
    await used.close()
    await assert.rejects(used.query('SELECT 1'), /the database is closed/)

    const again = await lendImageCopy(image)
    const next = await transactionNumber(again)
    assert.ok(
      next > lastUsed && next < lastUsed + 10,
      `the copy given back (${lastUsed}), not another (${next})`,
    )
    assert.deepEqual(await contents(again), fresh)
    const [settings] = await again.query<Record<string, unknown>>(
      `SELECT current_setting('statement_timeout') AS timeout, to_regclass('pg_temp.scratch') AS scratch,
              (SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory') AS locks,
              (SELECT count(*)::int FROM pg_statistic s JOIN pg_class c ON c.oid = s.starelid
               WHERE c.relname = 'enterprises') AS statistics`,
    )
    assert.deepEqual(settings, { timeout: '0', scratch: null, locks: 0, statistics: 0 })
    const now = await again.listen('earlier', () => heard.push('the new listener'))
    await again.query(`NOTIFY earlier, 'after'`)
    while (!heard.includes('the new listener')) await new Promise((resolve) => setImmediate(resolve))
    assert.deepEqual(heard, ['the new listener'], 'the earlier listener hears nothing')
    await now()
    await again.close()
  })

  test('one whose schema changed is closed, not lent again', async () => {
    const changed = await lendImageCopy(image)
    await changed.query('CREATE TABLE not_the_image (x int)')
    const lastChanged = await transactionNumber(changed)
    await changed.close()
    const next = await lendImageCopy(image)
    const number = await transactionNumber(next)
    assert.ok(number < lastChanged || number > lastChanged + 10, 'another copy')
    assert.equal((await next.query(`SELECT to_regclass('not_the_image') AS t`))[0]?.t, null)
    await next.close()
  })

  test('a transaction still running when its copy is given back is refused its next statement, and rolled back', async () => {
    const busy = await lendImageCopy(image)
    let closed: Promise<void> | undefined
    await assert.rejects(
      busy.transaction(async (tx) => {
        await tx.query(`INSERT INTO enterprises (name) VALUES ('Busy')`)
        closed = busy.close()
        await tx.query(`INSERT INTO enterprises (name) VALUES ('Busier')`)
      }),
      /the database is closed/,
    )
    await closed
    const next = await lendImageCopy(image)
    assert.deepEqual(await contents(next), fresh)
    await next.close()
  })
})
