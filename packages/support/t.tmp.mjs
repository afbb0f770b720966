import { readFileSync, rmSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'

const bytes = readFileSync('/tmp/img-cp.tar')
const blob = () => Object.assign(new Blob([]), { arrayBuffer: async () => bytes.buffer })
const wasmModule = await WebAssembly.compile(
  readFileSync('../../node_modules/@electric-sql/pglite/dist/pglite.wasm'),
)
const cpu = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}
// make a disk copy
rmSync('/tmp/pgdisk', { recursive: true, force: true })
{
  const db = await PGlite.create('/tmp/pgdisk', { loadDataDir: blob(), wasmModule })
  await db.close()
}
for (let i = 0; i < 3; i++) {
  let c = cpu(),
    w = Date.now()
  const db = await PGlite.create({ loadDataDir: blob(), wasmModule })
  const c1 = cpu(),
    w1 = Date.now()
  await db.query('select 1')
  await db.close()
  console.log(
    'memory+image create',
    (c1 - c).toFixed(0),
    'cpu ms',
    w1 - w,
    'wall; close',
    (cpu() - c1).toFixed(0),
  )
  c = cpu()
  w = Date.now()
  const d2 = await PGlite.create('/tmp/pgdisk', { wasmModule })
  const c2 = cpu()
  await d2.close()
  console.log(
    'disk create',
    (c2 - c).toFixed(0),
    'cpu ms',
    Date.now() - w,
    'wall; close',
    (cpu() - c2).toFixed(0),
  )
}
