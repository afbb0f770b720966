import { openPglite, type PgliteDatabase, type Queryable } from '@earshot/support/storage'

/**
 * In-memory copies of a PGlite image (pglite-image.ts), lent to one test platform at a time. Opening a copy
 * costs about 0.4 s of CPU (a worker thread, PGlite's start, the image unpacked into its memory); a copy
 * given back is put back as the image had it instead, for the process's next platform: its tables emptied,
 * the image's rows and sequence values restored, statistics cleared, its session's settings, temporary
 * tables, listeners and advisory locks dropped. A copy whose schema changed is closed instead. Once given
 * back, a copy refuses the platform's statements, those of a transaction still running among them (which is
 * then rolled back).
 */

/** Copies kept idle in a process: a test file rarely runs more platforms than this at once. */
const IDLE_KEPT = 2

interface ImageState {
  /** What a change to the schema, roles or settings changes (pg_class and friends, not their statistics). */
  fingerprint: string
  tables: string[]
  /** Rows the image holds, as JSON, with the columns they are inserted into. */
  seeds: { table: string; columns: string; rows: string }[]
  sequences: { name: string; value: number; called: boolean }[]
}

const idle = new Map<string, PgliteDatabase[]>()
const states = new Map<string, Promise<ImageState>>()

/** A copy of the image: one given back earlier, reset, or a new one. Closing it gives it back. */
export async function lendImageCopy(image: string): Promise<PgliteDatabase> {
  const pool = idle.get(image) ?? []
  idle.set(image, pool)
  const db = pool.pop() ?? (await openPglite(undefined, { image }))
  if (!states.has(image)) states.set(image, readState(db))
  const state = (await states.get(image)) as ImageState
  return lent(db, async () => {
    // A copy that could not be reset is closed: the next platform gets a new one. The pool is counted again
    // after the reset, which others given back meanwhile may have filled.
    const reset = pool.length < IDLE_KEPT && (await resetToImage(db, state).catch(() => false))
    if (reset && pool.length < IDLE_KEPT) pool.push(db)
    else await db.close()
  })
}

/** The database as a platform uses it, until closed: then `giveBack` has it. */
function lent(db: PgliteDatabase, giveBack: () => Promise<void>): PgliteDatabase {
  let closing: Promise<void> | undefined
  const unlisteners = new Set<() => Promise<void>>()
  const refuse = () => Promise.reject(new Error('the database is closed'))
  const guarded = (queryable: Queryable): Queryable => ({
    query: (sql, params) => (closing ? refuse() : queryable.query(sql, params)),
  })
  return {
    kind: 'pglite',
    query: (sql, params) => (closing ? refuse() : db.query(sql, params)),
    transaction: (fn) => (closing ? refuse() : db.transaction((tx) => fn(guarded(tx)))),
    session: (fn) => (closing ? refuse() : db.session((session) => fn(guarded(session)))),
    async listen(channel, onNotify) {
      if (closing) return refuse()
      const stop = await db.listen(channel, (payload) => closing || onNotify(payload))
      unlisteners.add(stop)
      return async () => {
        if (unlisteners.delete(stop)) await stop()
      }
    },
    dumpTo: (file) => (closing ? refuse() : db.dumpTo(file)),
    close() {
      closing ??= (async () => {
        for (const stop of unlisteners) await stop().catch(() => {})
        unlisteners.clear()
        await giveBack()
      })()
      return closing
    },
  }
}

const USER_TABLES = `
  SELECT c.oid::regclass::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
  ORDER BY 1`

/** A hash of the catalog rows a change to the schema, roles or settings writes, leaving out statistics. */
const FINGERPRINT = `
  SELECT md5(string_agg(row, ';' ORDER BY row)) AS fingerprint FROM (
    SELECT concat_ws(',', 'c', oid, relname, relnamespace, relkind, relnatts, reloptions, relacl) FROM pg_class
    UNION ALL SELECT concat_ws(',', 'a', attrelid, attnum, attname, atttypid, attnotnull, atthasdef,
      attisdropped, attgenerated, attidentity) FROM pg_attribute
    UNION ALL SELECT concat_ws(',', 'p', oid, proname, md5(prosrc), proconfig) FROM pg_proc
    UNION ALL SELECT concat_ws(',', 't', oid, tgrelid, tgname, tgenabled) FROM pg_trigger
    UNION ALL SELECT concat_ws(',', 'k', oid, conname, conrelid, convalidated) FROM pg_constraint
    UNION ALL SELECT concat_ws(',', 'i', indexrelid, indisvalid, indisready) FROM pg_index
    UNION ALL SELECT concat_ws(',', 'n', oid, nspname) FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%temp\\_%'
    UNION ALL SELECT concat_ws(',', 'y', oid, typname) FROM pg_type
    UNION ALL SELECT concat_ws(',', 'r', oid, rolname, rolsuper, rolcanlogin) FROM pg_authid
    UNION ALL SELECT concat_ws(',', 's', setdatabase, setrole, setconfig) FROM pg_db_role_setting
    UNION ALL SELECT concat_ws(',', 'w', oid, ev_class, rulename) FROM pg_rewrite
    UNION ALL SELECT concat_ws(',', 'e', oid, extname) FROM pg_extension
    UNION ALL SELECT concat_ws(',', 'd', oid, datname, datallowconn) FROM pg_database
  ) AS catalog(row)`

/** What resetToImage puts back, read from a copy no platform has used yet. */
async function readState(db: Queryable): Promise<ImageState> {
  const [{ fingerprint } = { fingerprint: '' }] = await db.query<{ fingerprint: string }>(FINGERPRINT)
  const tables = (await db.query<{ name: string }>(USER_TABLES)).map(({ name }) => name)
  const seeds: ImageState['seeds'] = []
  for (const table of tables) {
    const [{ rows } = { rows: null }] = await db.query<{ rows: string | null }>(
      `SELECT json_agg(t)::text AS rows FROM ${table} t`,
    )
    if (rows === null) continue
    const inserted = await db.query<{ name: string }>(
      `SELECT quote_ident(attname) AS name FROM pg_attribute
       WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '' ORDER BY attnum`,
      [table],
    )
    seeds.push({ table, columns: inserted.map(({ name }) => name).join(', '), rows })
  }
  const sequences = await db.query<ImageState['sequences'][number]>(
    `SELECT format('%I.%I', schemaname, sequencename) AS name, coalesce(last_value, start_value) AS value,
            last_value IS NOT NULL AS called
     FROM pg_sequences`,
  )
  return { fingerprint, tables, seeds, sequences }
}

/** Puts the copy back as the image had it; false when its schema is no longer the image's. */
async function resetToImage(db: PgliteDatabase, state: ImageState): Promise<boolean> {
  for (const statement of ['RESET ALL', 'DISCARD TEMP', 'UNLISTEN *', 'SELECT pg_advisory_unlock_all()']) {
    await db.query(statement)
  }
  const [{ fingerprint } = { fingerprint: '' }] = await db.query<{ fingerprint: string }>(FINGERPRINT)
  if (fingerprint !== state.fingerprint) return false
  await db.transaction(async (tx) => {
    // The rows put back are the image's as they were: no trigger of the schema runs for them.
    await tx.query('SET LOCAL session_replication_role = replica')
    if (state.tables.length > 0) await tx.query(`TRUNCATE ${state.tables.join(', ')}`)
    for (const { table, columns, rows } of state.seeds) {
      await tx.query(
        `INSERT INTO ${table} (${columns}) OVERRIDING SYSTEM VALUE
         SELECT ${columns} FROM json_populate_recordset(NULL::${table}, $1::json)`,
        [rows],
      )
    }
    for (const { name, value, called } of state.sequences) {
      await tx.query('SELECT setval($1::regclass, $2, $3)', [name, value, called])
    }
    await tx.query('DELETE FROM pg_statistic')
  })
  await db.query('SELECT pg_stat_reset()')
  return true
}
