import { readFileSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'

const wasmModule = await WebAssembly.compile(
  readFileSync('../../node_modules/@electric-sql/pglite/dist/pglite.wasm'),
)
const cpu = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
const extra = process.argv.slice(2)
for (let i = 0; i < 4; i++) {
  const c = cpu()
  const d2 = await PGlite.create('/tmp/pgdisk', {
    wasmModule,
    startParams: [...PGlite.defaultStartParams, ...extra],
  })
  const r = await d2.query(
    "select current_setting('shared_buffers') sb, current_setting('max_connections') mc",
  )
  await d2.close()
  console.log((cpu() - c).toFixed(0), JSON.stringify(r.rows[0]))
}
