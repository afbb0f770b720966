/**
 * Child process of `import-memory.bench.ts`: the platform (configured from the environment, as
 * push-platform.ts), with an enterprise to import into, sampling its own memory: the peak RSS every 50 ms
 * and, after a forced garbage collection, the peak heap in use every second (it runs with --expose-gc).
 * "reset" starts a new measure from now; "peak" reports it; "analyze" runs ANALYZE on every table.
 */
import { loadConfig, startPlatform } from '@earshot/platform'
import { createEnterprise } from '@earshot/platform/internal'
import { TEST_ADMIN_TOKEN } from '@earshot/test-kit/backends'
import { serveParent } from '../child.js'

export interface ImportPlatformReady {
  type: 'ready'
  adminUrl: string
  partnerUrl: string
  adminToken: string
  enterpriseId: number
  secret: string
}

export interface MemoryPeak {
  type: 'peak'
  rssBytes: number
  heapAfterGcBytes: number
}

const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('import-platform.js runs with --expose-gc')
const config = { ...loadConfig(process.env), adminToken: process.env.EARSHOT_ADMIN_TOKEN ?? TEST_ADMIN_TOKEN }
const platform = await startPlatform({ config })
const { db } = platform.context
const { enterpriseId, secret } = await createEnterprise(db, 'Import bench', 'https://partner.example/push')

let rss = 0
let heap = 0
const measure = () => {
  gc()
  rss = process.memoryUsage.rss()
  heap = process.memoryUsage().heapUsed
}
measure()
setInterval(() => {
  rss = Math.max(rss, process.memoryUsage.rss())
}, 50).unref()
setInterval(() => {
  gc()
  heap = Math.max(heap, process.memoryUsage().heapUsed)
}, 1000).unref()

const peak = (): MemoryPeak => ({ type: 'peak', rssBytes: rss, heapAfterGcBytes: heap })
process.on('message', (message: { type?: string }) => {
  if (message.type === 'reset') {
    measure()
    process.send?.(peak())
  } else if (message.type === 'peak') process.send?.(peak())
  else if (message.type === 'analyze')
    void db.query('ANALYZE').then(() => process.send?.({ type: 'analyzed' }))
})
serveParent(
  {
    adminUrl: platform.adminUrl,
    partnerUrl: platform.partnerUrl,
    adminToken: config.adminToken,
    enterpriseId,
    secret,
  } satisfies Omit<ImportPlatformReady, 'type'>,
  () => platform.close(),
)
