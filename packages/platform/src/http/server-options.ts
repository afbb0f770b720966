import type { FastifyServerOptions } from 'fastify'
import type { PlatformConfig } from '../config/config.js'

/** Shared by both listeners: set when shutdown starts so new requests are refused with 5030. */
export interface Lifecycle {
  shuttingDown: boolean
}

/**
 * JSON logs (pino) on stderr — stdout is the CLI's — without secrets: request bodies are never
 * logged, and the headers that carry credentials are redacted should a serializer ever include them.
 */
export function loggerOptions(level: PlatformConfig['logLevel']): FastifyServerOptions['logger'] {
  return {
    level,
    stream: process.stderr,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' },
  }
}
