import { RecordingFilter } from '@earshot/protocol'
import { existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { defineRoute } from '../http/route-spec.js'
import { listRecordingsContract } from './recording-contract.js'
import { queryRecordings } from './recording-store.js'
import type { RecordingsContext } from './recordings-context.js'

const NUMBERS = new Set(['page', 'size'])

/**
 * GET …/recordings: the enterprise's recordings as its partner's query answers them (stored audio as links
 * minted now), for the console and operators.
 */
export const recordingListRoute = defineRoute(
  listRecordingsContract,
  (context: RecordingsContext) =>
    async function listRecordings(request) {
      const enterpriseId = await existingEnterpriseId(context.db, request)
      const given = Object.entries(request.query as Record<string, string>).map(([name, value]) => [
        name,
        NUMBERS.has(name) && /^\d{1,9}$/.test(value) ? Number(value) : value,
      ])
      const filter = RecordingFilter.parse(Object.fromEntries(given))
      const audioLink = await context.media.audioLinks(enterpriseId)
      return queryRecordings(context.db, enterpriseId, filter, audioLink)
    },
)
