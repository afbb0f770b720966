import { readFileSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'

const wasmModule = await WebAssembly.compile(
  readFileSync('../../node_modules/@electric-sql/pglite/dist/pglite.wasm'),
)
for (let i = 0; i < 4; i++) {
  const d2 = await PGlite.create('/tmp/pgdisk', { wasmModule })
  await d2.close()
}
