import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Database } from './database.js'
import { openPglite } from './pglite.js'

/** openPglite runs PGlite in a worker thread: the Database it returns must behave as PGlite in-process did. */

/** A promise with its resolve function, to hold a transaction open until a test lets it go. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void
  const opened = new Promise<void>((resolve) => {
    open = resolve
  })
  return { opened, open }
}

describe('openPglite: PGlite in a worker thread', { timeout: 120_000 }, () => {
  let db: Database

  before(async () => {
    db = await openPglite(undefined)
    await db.query(
      'CREATE TABLE items (id int8 PRIMARY KEY, label text NOT NULL, data bytea, at timestamptz)',
    )
  })
  after(async () => {
    await db?.close()
  })

  test('values keep their types both ways: int8 as a number, bytea, timestamptz, arrays, null', async () => {
    const at = new Date('2026-03-01T10:00:00.123Z')
    const [row] = await db.query(
      `SELECT $1::int8 AS n, count(*) AS c, $2::bytea AS b, $3::timestamptz AS t, $4::text[] AS a, $5::text AS z,
              '2026-03-01T10:00:00.000001Z'::timestamptz = $6::timestamptz AS exact
         FROM (VALUES (1), (2)) v`,
      [2 ** 40, Buffer.from([0, 1, 255]), at, ['x', 'y'], null, '2026-03-01T10:00:00.000001Z'],
    )
    assert.deepEqual(row, {
      n: 2 ** 40,
      c: 2,
      b: new Uint8Array([0, 1, 255]),
      t: at,
      a: ['x', 'y'],
      z: null,
      exact: true,
    })
  })

  test('a PostgreSQL error keeps its code, detail, constraint and message, with the caller in its stack', async () => {
    await db.query(`INSERT INTO items (id, label) VALUES (1, 'one')`)
    await assert.rejects(
      db.query(`INSERT INTO items (id, label) VALUES (1, 'again')`),
      (error: Error & Record<string, unknown>) => {
        assert.equal(error.code, '23505')
        assert.equal(error.detail, 'Key (id)=(1) already exists.')
        assert.equal(error.constraint, 'items_pkey')
        assert.equal(error.table, 'items')
        assert.match(error.message, /duplicate key value violates unique constraint "items_pkey"/)
        assert.match(error.stack ?? '', /pglite\.test\.js/)
        return true
      },
    )
    await assert.rejects(
      db.query(
        `DO $$ BEGIN RAISE EXCEPTION 'pending → done is not a transition' USING ERRCODE = 'EQ001'; END $$`,
      ),
      { code: 'EQ001', message: 'pending → done is not a transition' },
    )
  })

  test('a transaction commits what fn did and returns its result', async () => {
    const result = await db.transaction(async (tx) => {
      await tx.query(`INSERT INTO items (id, label) VALUES (10, 'ten')`)
      const [row] = await tx.query<{ label: string }>('SELECT label FROM items WHERE id = 10')
      return row?.label
    })
    assert.equal(result, 'ten')
    assert.equal((await db.query('SELECT 1 FROM items WHERE id = 10')).length, 1)
  })

  test('fn throwing rolls back and rethrows its own error; a failed statement keeps its code', async () => {
    class Refused extends Error {}
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query(`INSERT INTO items (id, label) VALUES (20, 'twenty')`)
        throw new Refused('changed my mind')
      }),
      (error: unknown) => error instanceof Refused,
    )
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query(`INSERT INTO items (id, label) VALUES (21, 'twenty-one')`)
        await tx.query(`INSERT INTO items (id, label) VALUES (21, 'twice')`)
      }),
      { code: '23505' },
    )
    assert.deepEqual(await db.query('SELECT id FROM items WHERE id IN (20, 21)'), [])
  })

  test('a query asked while a transaction is open runs after it, not inside it', async () => {
    const held = gate()
    const inserted = gate()
    const order: string[] = []
    const transaction = db
      .transaction(async (tx) => {
        await tx.query(`INSERT INTO items (id, label) VALUES (30, 'uncommitted')`)
        inserted.open()
        await held.opened
        throw new Error('roll back')
      })
      .catch(() => order.push('transaction over'))
    await inserted.opened
    // Asked while the transaction holds the one connection: inside it, it would see row 30.
    const outside = db.query<{ n: number }>('SELECT count(*) AS n FROM items WHERE id = 30').then((rows) => {
      order.push('outside query')
      return rows
    })
    held.open()
    await transaction
    assert.deepEqual(await outside, [{ n: 0 }])
    assert.deepEqual(order, ['transaction over', 'outside query'])
  })

  test('transactions asked at once run one after the other', async () => {
    await db.query(`INSERT INTO items (id, label) VALUES (40, '0')`)
    const increment = () =>
      db.transaction(async (tx) => {
        const [row] = await tx.query<{ label: string }>('SELECT label FROM items WHERE id = 40')
        await new Promise((resolve) => setImmediate(resolve))
        await tx.query('UPDATE items SET label = $1 WHERE id = 40', [String(Number(row?.label) + 1)])
      })
    await Promise.all(Array.from({ length: 5 }, increment))
    assert.deepEqual(await db.query('SELECT label FROM items WHERE id = 40'), [{ label: '5' }])
  })

  test('each SQL text is prepared once, and its statement outlives errors and rolled-back transactions', async () => {
    const insert = 'INSERT INTO items (id, label) VALUES ($1, $2) RETURNING id'
    const preparedAs = async (sql: string) =>
      (
        await db.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE statement = $1', [
          sql,
        ])
      ).map((row) => row.name)
    assert.deepEqual(await db.query(insert, [501, 'first']), [{ id: 501 }])
    const [name] = await preparedAs(insert)
    assert.ok(name, 'the insert is a named statement of the session')
    await assert.rejects(db.query(insert, [501, 'again']), { code: '23505' })
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query(insert, [502, 'rolled back'])
        throw new Error('roll back')
      }),
      /roll back/,
    )
    await assert.rejects(db.query('SELEC 1'), { code: '42601' })
    assert.deepEqual(await db.query(insert, [503, 'after']), [{ id: 503 }])
    assert.deepEqual(await preparedAs(insert), [name])
    const ids = await db.query<{ id: number }>('SELECT id FROM items WHERE id > 500 ORDER BY id')
    assert.deepEqual(
      ids.map((row) => row.id),
      [501, 503],
    )
  })

  test('a transaction query after its transaction is over is refused', async () => {
    let kept: { query: Database['query'] } | undefined
    await db.transaction(async (tx) => {
      kept = tx
    })
    await assert.rejects(kept?.query('SELECT 1') ?? Promise.resolve(), /transaction is over|closed/)
  })

  test('a parameter that cannot be sent to the worker is refused, not thrown', async () => {
    const rejected = db.query('SELECT $1::text', [() => 1])
    await assert.rejects(rejected)
    assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }])
  })

  test('NOTIFY reaches listen callbacks after commit; a stopped listener hears nothing more', async () => {
    const heard: string[] = []
    const next = () => new Promise<void>((resolve) => waiters.push(resolve))
    const waiters: (() => void)[] = []
    const stopFirst = await db.listen('item_events', () => {
      heard.push('first')
      waiters.shift()?.()
    })
    let heardFirst = next()
    await db.transaction(async (tx) => {
      await tx.query(`NOTIFY item_events`)
      assert.deepEqual(heard, [], 'not before commit')
    })
    await heardFirst
    heardFirst = next()
    await db.query(`NOTIFY item_events`)
    await heardFirst
    assert.deepEqual(heard, ['first', 'first'])

    await stopFirst()
    let heardSecond!: () => void
    const second = new Promise<void>((resolve) => {
      heardSecond = resolve
    })
    const stopSecond = await db.listen('item_events', () => {
      heard.push('second')
      heardSecond()
    })
    await db.query(`NOTIFY item_events`)
    await second // notifications arrive in order: the first listener would have heard this one already
    assert.deepEqual(heard, ['first', 'first', 'second'])
    await stopSecond()
  })

  test('a long statement does not hold up this thread: its event loop keeps turning meanwhile', async () => {
    let turns = 0
    let done = false
    const spin = () => {
      if (done) return
      turns++
      setImmediate(spin)
    }
    setImmediate(spin)
    await db.query('SELECT count(*) FROM generate_series(1, 2000000)')
    done = true
    assert.ok(turns >= 10, `${turns} turns of the event loop while the statement ran`)
  })
})

describe('openPglite: lifecycle', { timeout: 120_000 }, () => {
  const directory = mkdtempSync(join(tmpdir(), 'earshot-pglite-'))
  after(() => rmSync(directory, { recursive: true, force: true }))

  test('a data directory keeps its data across close and reopen; close releases the lock', async () => {
    const dataDir = join(directory, 'data')
    const first = await openPglite(dataDir)
    await first.query('CREATE TABLE kept (n int)')
    await first.query('INSERT INTO kept VALUES (7)')
    await first.close()
    await first.close() // twice is harmless
    assert.equal(existsSync(`${dataDir}.lock`), false)
    await assert.rejects(first.query('SELECT 1'), /closed/)
    const second = await openPglite(dataDir)
    try {
      assert.deepEqual(await second.query('SELECT n FROM kept'), [{ n: 7 }])
    } finally {
      await second.close()
    }
  })

  test('PGlite failing to open is refused with its error, and the lock is released', async () => {
    const notADirectory = join(directory, 'a-file')
    writeFileSync(notADirectory, 'not a data directory')
    await assert.rejects(openPglite(notADirectory), (error: Error) => {
      assert.doesNotMatch(error.message, /worker/, 'the error of PGlite, not of the worker')
      return true
    })
    assert.equal(existsSync(`${notADirectory}.lock`), false)
  })

  test('memory:// is in memory: no directory, no lock', async () => {
    const db = await openPglite('memory://')
    try {
      assert.deepEqual(await db.query('SELECT 1 AS one'), [{ one: 1 }])
      assert.equal(existsSync('memory:'), false)
    } finally {
      await db.close()
    }
  })

  test('an open database does not keep a process alive once nothing is asked of it', () => {
    const module = new URL('./pglite.js', import.meta.url).href
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const { openPglite } = await import(${JSON.stringify(module)})
         const db = await openPglite(undefined)
         const [row] = await db.query('SELECT 41 + 1 AS answer')
         await db.listen('never', () => {})
         console.log(row.answer)`,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    )
    assert.equal(child.status, 0, child.stderr)
    assert.equal(child.stdout.trim(), '42')
  })
})
