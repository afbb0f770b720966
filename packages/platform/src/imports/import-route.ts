import { Readable } from 'node:stream'
import { ResponseCode } from '@earshot/protocol'
import type { FastifyInstance } from 'fastify'
import type { PlatformContext } from '../context.js'
import { existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { ApiError } from '../http/api-error.js'
import { importJsonLines } from './json-lines-import.js'

/** JSON Lines content types: the body is handed over as the request stream, read line by line. */
export const JSON_LINES_TYPES = ['application/x-ndjson', 'application/jsonl']

/** POST …/recordings/import: a JSON Lines file of recordings, answered with NDJSON progress then its summary. */
export function importRoute(app: FastifyInstance, context: PlatformContext, prefix: string): void {
  const { db, config } = context
  app.post(`${prefix}/enterprises/:enterpriseId/recordings/import`, async (request, reply) => {
    const enterpriseId = await existingEnterpriseId(db, request)
    if (!(request.body instanceof Readable)) {
      throw new ApiError(
        ResponseCode.UNSUPPORTED_MEDIA_TYPE,
        'send the JSON Lines file as Content-Type application/x-ndjson',
      )
    }
    const target = {
      db,
      events: context.recordingEvents,
      enterpriseId,
      bodyLimitBytes: config.adminBodyLimitBytes,
    }
    return importJsonLines(target, request, reply)
  })
}
