import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { EVENT_TYPES } from '@earshot/protocol'
import { type Database, openPglite } from '@earshot/support/storage'
import { migrate } from './migrations.js'

/**
 * The event types are protocol's EVENT_TYPES; the database spells them out in CHECK constraints
 * (deliveries.event_type, endpoints.event_types). An event type added to the protocol fails here until a
 * new migration widens every one of them.
 */

describe('the event types the database accepts', { timeout: 60_000 }, () => {
  let db: Database
  before(async () => {
    db = await openPglite(undefined)
    await migrate(db)
  })
  after(async () => {
    await db?.close()
  })

  test("every constraint naming event types names exactly the protocol's", async () => {
    const constraints = await db.query<{ name: string; definition: string }>(
      `SELECT format('%s.%s', conrelid::regclass, conname) AS name, pg_get_constraintdef(oid) AS definition
         FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace AND pg_get_constraintdef(oid) LIKE '%recording.%'
        ORDER BY 1`,
    )
    assert.deepEqual(
      constraints.map(({ name }) => name),
      ['deliveries.deliveries_event_type_check', 'endpoints.endpoints_event_types_check'],
    )
    for (const { name, definition } of constraints) {
      const named = [...definition.matchAll(/'(recording\.[a-z_]+)'/g)].map((match) => match[1])
      assert.deepEqual(
        [...new Set(named)].sort(),
        [...EVENT_TYPES].sort(),
        `${name} does not accept exactly protocol's EVENT_TYPES: add a migration that changes it`,
      )
    }
  })
})
