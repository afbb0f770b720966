/**
 * Child process of `receiver.bench.ts`: one server, picked by BENCH_SERVER.
 *
 * - `bare`: node:http that reads the body, parses it as JSON and answers `{"code":2000,"msg":"success"}`;
 * - `receiver`: the push receiver with its durable outbox on PGlite in BENCH_DATA_DIR (or on PostgreSQL
 *   at BENCH_DATABASE_URL), onRecording a no-op, and a receipt callback that succeeds at once (so the
 *   outbox's outcomes are written too);
 * - `receiver-db`: the same, with onRecording storing each recording in the same PGlite (the
 *   `recordings` table of `earshot-partner listen`).
 */
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  createPushReceiver,
  databaseRecordingStore,
  openCallbackOutbox,
  openDatabase,
  silentLogger,
} from '@earshot/partner'
import { serveParent } from '../child.js'

export interface ReceiverServerReady {
  type: 'ready'
  url: string
}

const kind = process.env.BENCH_SERVER
const ok = Buffer.from(JSON.stringify({ code: 2000, msg: 'success' }))
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': ok.length }

let close = async () => {}
let listener: RequestListener
if (kind === 'bare') {
  listener = (request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString('utf8'))
      response.writeHead(200, headers)
      response.end(ok)
    })
  }
} else if (kind === 'receiver' || kind === 'receiver-db') {
  const databaseUrl = process.env.BENCH_DATABASE_URL
  const db = await openDatabase(
    databaseUrl ? { databaseUrl } : { dataDir: process.env.BENCH_DATA_DIR as string },
  )
  const outbox = await openCallbackOutbox({ database: db, confirm: async () => {}, log: silentLogger })
  const store = kind === 'receiver-db' ? await databaseRecordingStore(db) : undefined
  const receiver = createPushReceiver({
    secret: process.env.BENCH_SECRET as string,
    outbox,
    log: silentLogger,
    onRecording: async (push) => {
      await store?.save(push)
    },
  })
  listener = receiver.handler
  close = async () => {
    await outbox.close()
    await db.close()
  }
} else {
  throw new Error(`BENCH_SERVER: unknown server ${kind}`)
}

const server = createServer(listener)
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  serveParent({ url: `http://127.0.0.1:${port}` }, async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await close()
  })
})
