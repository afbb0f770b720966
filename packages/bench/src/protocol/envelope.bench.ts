/**
 * `npm run bench:protocol`: seal and open next to the bare node:crypto calls, in one run.
 *
 * Two baselines. "Raw wire" does the same job with the bare calls — object in, envelope out, with the
 * JSON, Base64 and fresh nonce any envelope code must do — but none of the protocol layer's checks;
 * the ≤ 1.5x target is judged against it. "Raw AES-GCM" is createCipheriv/createDecipheriv on bytes
 * alone, shown so the cost of the wire format itself is visible.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { cpus } from 'node:os'
import { type Envelope, generateSecret, loadKey, open, seal } from '@earshot/protocol'
import { Bench } from 'tinybench'
import { BENCHMARKS_DOC, writeMarkdownSection } from '../markdown-section.js'

const BATCH = 100
const ROUNDS = 5
const TARGET_RATIO = 1.5
const key = loadKey(generateSecret())

function plaintextOfSize(bytes: number) {
  const base = { audioId: 'aud_0123456789', deviceUid: 'DEV-000042', page: 1, size: 20, note: '' }
  base.note = 'x'.repeat(bytes - JSON.stringify(base).length)
  return base
}

function rawSealBytes(bytes: Buffer) {
  const cipher = createCipheriv('aes-256-gcm', key, randomBytes(12), { authTagLength: 16 })
  cipher.update(bytes)
  cipher.final()
  return cipher.getAuthTag()
}

function rawOpenBytes(nonce: Buffer, ciphertext: Buffer, tag: Buffer) {
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 })
  decipher.setAuthTag(tag)
  return Buffer.concat([decipher.update(ciphertext), decipher.final()])
}

function rawSealWire(plaintext: object): Envelope {
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 })
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(plaintext), 'utf8'), cipher.final()])
  return {
    specVersion: '1',
    alg: 'A256GCM',
    keyVersion: 1,
    eventId: 'evt',
    nonce: nonce.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  }
}

function rawOpenWire(envelope: Envelope): unknown {
  const bytes = rawOpenBytes(
    Buffer.from(envelope.nonce, 'base64'),
    Buffer.from(envelope.ciphertext, 'base64'),
    Buffer.from(envelope.tag, 'base64'),
  )
  return JSON.parse(bytes.toString('utf8'))
}

const batch = (fn: () => unknown) => () => {
  for (let i = 0; i < BATCH; i++) fn()
}

interface Row {
  operation: string
  protocol: number
  rawCrypto: number
  rawWire: number
}

async function measure(size: number): Promise<Row[]> {
  const plaintext = plaintextOfSize(size)
  const bytes = Buffer.from(JSON.stringify(plaintext))
  const envelope = seal(key, 1, 'evt', plaintext)
  const nonce = Buffer.from(envelope.nonce, 'base64')
  const ciphertext = Buffer.from(envelope.ciphertext, 'base64')
  const tag = Buffer.from(envelope.tag, 'base64')

  const tasks: Record<string, () => unknown> = {
    seal: () => seal(key, 1, 'evt', plaintext),
    'seal raw crypto': () => rawSealBytes(bytes),
    'seal raw wire': () => rawSealWire(plaintext),
    open: () => open(envelope, key),
    'open raw crypto': () => rawOpenBytes(nonce, ciphertext, tag),
    'open raw wire': () => rawOpenWire(envelope),
  }
  // Several short rounds, median per task: one long round per task is at the mercy of whatever else
  // the machine does during it.
  const samples = new Map<string, number[]>()
  for (let round = 0; round < ROUNDS; round++) {
    const bench = new Bench({ time: 400, warmupTime: 100 })
    for (const [name, fn] of Object.entries(tasks)) bench.add(name, batch(fn))
    await bench.run()
    for (const task of bench.tasks) {
      if (task.result.state !== 'completed') throw new Error(`${task.name} did not complete`)
      samples.set(task.name, [...(samples.get(task.name) ?? []), (BATCH * 1000) / task.result.period])
    }
  }
  const opsPerSecond = (name: string) => median(samples.get(name) ?? [])
  return ['seal', 'open'].map((operation) => ({
    operation: `${operation} ${size >= 1024 ? `${size / 1024} KiB` : `${size} B`}`,
    protocol: opsPerSecond(operation),
    rawCrypto: opsPerSecond(`${operation} raw crypto`),
    rawWire: opsPerSecond(`${operation} raw wire`),
  }))
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

const rows = [...(await measure(200)), ...(await measure(20 * 1024))]
const format = (n: number) => Math.round(n).toLocaleString('en-US')
const table = [
  '| operation | protocol ops/s | raw wire ops/s | protocol time ÷ raw wire time | within 1.5x | raw AES-GCM only ops/s |',
  '|---|---:|---:|---:|:---:|---:|',
  ...rows.map((row) => {
    const ratio = row.rawWire / row.protocol
    return `| ${row.operation} | ${format(row.protocol)} | ${format(row.rawWire)} | ${ratio.toFixed(2)} | ${ratio <= TARGET_RATIO ? 'yes' : 'NO'} | ${format(row.rawCrypto)} |`
  }),
].join('\n')

const machine = `${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`
const section = `Measured ${machine}; median of ${ROUNDS} rounds, ${BATCH} calls per sample (tinybench).\n\n${table}`
console.log(section)

writeMarkdownSection(BENCHMARKS_DOC, 'protocol', section, { heading: '## Protocol' })
console.log(`\nwritten to ${BENCHMARKS_DOC.pathname}`)
