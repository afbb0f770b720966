import { migrate } from '@earshot/platform/internal'
import { openPglite } from '@earshot/support/storage'

const db = await openPglite(undefined)
await migrate(db)
await db.query("UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0','template1')")
await db.query('DROP DATABASE template0')
await db.query('DROP DATABASE template1')
await db.query('CHECKPOINT')
await db.dumpTo(process.argv[2])
await db.close()
