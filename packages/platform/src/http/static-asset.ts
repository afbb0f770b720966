import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** A file served from memory (the API reference, the console), revalidated by its ETag on every load. */
export interface StaticAsset {
  body: Buffer
  type: string
  etag: string
}

export function staticAsset(body: Buffer | string, type: string): StaticAsset {
  const bytes = Buffer.from(body)
  return {
    body: bytes,
    type,
    etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 27)}"`,
  }
}

/**
 * A module of plain data, as a browser loads it: each value exported under its name, as JSON. The console
 * loads tables made from the platform's own (whose modules import what a browser cannot) this way.
 */
export function dataModule(values: Record<string, unknown>): string {
  return Object.entries(values)
    .map(([name, value]) => `export const ${name} = ${JSON.stringify(value, null, 2)}\n`)
    .join('')
}

/** Sends an asset under a content security policy, or 304 when the client holds this version. */
export function sendStaticAsset(
  request: FastifyRequest,
  reply: FastifyReply,
  { body, type, etag }: StaticAsset,
  contentSecurityPolicy: string,
): FastifyReply {
  reply.headers({
    'cache-control': 'no-cache',
    etag,
    'content-security-policy': contentSecurityPolicy,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
  })
  if (request.headers['if-none-match'] === etag) return reply.code(304).send()
  return reply.type(type).send(body)
}
