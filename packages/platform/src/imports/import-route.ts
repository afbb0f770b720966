import { Readable } from 'node:stream'
import { ResponseCode } from '@earshot/protocol'
import type { PlatformContext } from '../context/platform-context.js'
import { existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import { importRecordingsContract } from './import-contract.js'
import { importJsonLines } from './json-lines-import.js'

/** POST …/recordings/import: a JSON Lines file of recordings, answered with NDJSON progress then its summary. */
export const importRoute = defineRoute(
  importRecordingsContract,
  (context: PlatformContext) =>
    async function importRecordings(request, reply) {
      const { db, config } = context
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
        denoiseUrlAllowHttp: config.denoiseUrlAllowHttp,
      }
      return importJsonLines(target, request, reply)
    },
)
