/**
 * Child process of `media.bench.ts`: the baseline, a bare node:http server streaming one file from disk
 * (BENCH_MEDIA_FILE) at any path, whole (200) or one `Range: bytes=a-b` of it (206 + Content-Range, with
 * fs.createReadStream start/end), with the Content-Length, Content-Type and Accept-Ranges headers the
 * platform sends too. No link check, no database look-up, no framework. Answers "gc" as media-platform.ts.
 */
import { createReadStream, statSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serveParent } from '../child.js'
import { answerGcCounts } from './gc-counter.js'

export interface MediaBareReady {
  type: 'ready'
  url: string
}

answerGcCounts()
const path = process.env.BENCH_MEDIA_FILE
if (!path) throw new Error('media-bare-server.js needs BENCH_MEDIA_FILE')
const size = statSync(path).size

/** The one range of `bytes=a-b`, `bytes=a-` or `bytes=-n`; undefined (the whole file) otherwise. */
function rangeOf(header: string | undefined): { start: number; end: number } | 'unsatisfiable' | undefined {
  const match = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!match || (match[1] === '' && match[2] === '')) return undefined
  const [, first, last] = match as unknown as [string, string, string]
  if (first === '') {
    const suffix = Number(last)
    return suffix === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  const end = last === '' ? size - 1 : Number(last)
  if (end < start) return undefined
  if (start >= size) return 'unsatisfiable'
  return { start, end: Math.min(end, size - 1) }
}

const server = createServer((request, response) => {
  const range = rangeOf(request.headers.range)
  if (range === 'unsatisfiable') {
    response.writeHead(416, { 'content-range': `bytes */${size}` })
    response.end()
    return
  }
  const headers: Record<string, string | number> = {
    'content-type': 'audio/wav',
    'accept-ranges': 'bytes',
    'content-length': range ? range.end - range.start + 1 : size,
  }
  if (range) headers['content-range'] = `bytes ${range.start}-${range.end}/${size}`
  response.writeHead(range ? 206 : 200, headers)
  const stream = createReadStream(path, range ?? {})
  stream.on('error', () => response.destroy())
  response.on('close', () => stream.destroy())
  stream.pipe(response)
})
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  serveParent(
    { url: `http://127.0.0.1:${port}/audio.wav` },
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
})
