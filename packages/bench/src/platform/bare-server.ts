/**
 * Child process of `platform.bench.ts`: the baseline, a bare node:http server that reads each request
 * body and answers a fixed JSON body shaped (and sized) like a token response.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serveParent } from '../child.js'

export interface BareServerReady {
  type: 'ready'
  url: string
}

const body = Buffer.from(
  JSON.stringify({
    code: 2000,
    msg: 'success',
    requestId: '00000000-0000-4000-8000-000000000000',
    data: {
      accessToken: `v1.1.1.1767225600.${'A'.repeat(16)}.${'B'.repeat(43)}`,
      expiresIn: 7200,
      tokenType: 'Bearer',
    },
  }),
)
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }

const server = createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    response.writeHead(200, headers)
    response.end(body)
  })
})
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo
  serveParent(
    { url: `http://127.0.0.1:${port}` },
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
})
