import { migrate } from '@earshot/platform/internal'
import { openPglite } from '@earshot/support/storage'

const db = await openPglite(undefined)
await migrate(db)
if (process.argv[3] === 'checkpoint') await db.query('CHECKPOINT')
await db.dumpTo(process.argv[2])
await db.close()
