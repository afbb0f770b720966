import { RecordingDataSchema, RecordingFilter, RecordingFilterSchema } from '@earshot/protocol'
import Type from 'typebox'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import { EnterpriseParams, existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { WITH_ID } from '../http/admin-params.js'
import type { RouteSpec } from '../http/route-spec.js'
import { queryRecordings } from './recording-store.js'

const NUMBERS = new Set(['page', 'size'])

/** The partner query's filter, as a query string (every value text). */
const RecordingListQuery = Type.Object(
  Object.fromEntries(
    Object.entries(RecordingFilterSchema.properties).map(([name, property]) => [
      name,
      Type.Optional(Type.String({ description: (property as { description?: string }).description })),
    ]),
  ),
)

export const RecordingListAnswerSchema = Type.Object({
  total: Type.Integer({ minimum: 0 }),
  items: Type.Array(Type.Object({ audioId: Type.String(), data: RecordingDataSchema })),
})

/**
 * GET …/recordings: the enterprise's recordings as its partner's query answers them (the same filter,
 * order and sets; stored audio as links minted now), for the console and operators.
 */
export const recordingListRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('listRecordings'),
  tag: 'recordings',
  summary: "Find an enterprise's recordings, as its partner's query answers them",
  params: EnterpriseParams,
  query: RecordingListQuery,
  answer: { description: 'A page of recordings', payload: { json: RecordingListAnswerSchema } },
  refusals: WITH_ID,
  handle: (context) =>
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
}
