import { RecordingDataSchema, RecordingFilterSchema, ResponseCode, routeContract } from '@earshot/protocol'
import Type from 'typebox'
import { EnterpriseParams } from '../enterprises/enterprise-contract.js'
import { WITH_BODY, WITH_ID } from '../http/admin-refusals.js'
import { DeletedRecordingSchema, StoredRecordingSchema, UpdatedRecordingSchema } from './recording-answers.js'
import { RecordingInputSchema, RecordingUpdateSchema, TranscriptPartSchema } from './recording-input.js'

/* The operators' recordings: find them, add one, attach or replace its transcript, update it, delete it. */

/** A path naming a recording of an enterprise. */
export const RecordingParams = Type.Object({
  ...EnterpriseParams.properties,
  audioId: Type.String({ minLength: 1, description: 'the recording' }),
})

/** The partner query's filter, as a query string (every value text). */
const RecordingListQuery = Type.Object(
  Object.fromEntries(
    Object.entries(RecordingFilterSchema.properties).map(([name, property]) => [
      name,
      Type.Optional(Type.String({ description: (property as { description?: string }).description })),
    ]),
  ) as { [Name in keyof typeof RecordingFilterSchema.properties]: Type.TOptional<Type.TString> },
)

export const RecordingListAnswerSchema = Type.Object({
  total: Type.Integer({ minimum: 0 }),
  items: Type.Array(Type.Object({ audioId: Type.String(), data: RecordingDataSchema })),
})

/** The enterprise's recordings as its partner's query answers them (the same filter, order and sets). */
export const listRecordingsContract = routeContract({
  method: 'GET',
  path: '/admin/v1/enterprises/:enterpriseId/recordings',
  operationId: 'listRecordings',
  tag: 'recordings',
  summary: "Find an enterprise's recordings, as its partner's query answers them",
  params: EnterpriseParams,
  query: RecordingListQuery,
  answer: { description: 'A page of recordings', payload: { json: RecordingListAnswerSchema } },
  refusals: WITH_ID,
  permission: 'recordings.read',
})

export const ingestRecordingContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/recordings',
  operationId: 'ingestRecording',
  tag: 'recordings',
  summary: 'Ingest one recording (and schedule its pushes)',
  params: EnterpriseParams,
  body: { json: RecordingInputSchema },
  answer: { status: 201, description: 'Stored', payload: { json: StoredRecordingSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'recordings.write',
})

export const attachTranscriptContract = routeContract({
  method: 'PUT',
  path: '/admin/v1/enterprises/:enterpriseId/recordings/:audioId/transcript',
  operationId: 'attachTranscript',
  tag: 'recordings',
  summary: "Attach or replace a recording's transcript (a transcript_ready push)",
  params: RecordingParams,
  body: { json: TranscriptPartSchema },
  answer: { description: 'Stored', payload: { json: StoredRecordingSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'recordings.write',
})

export const updateRecordingContract = routeContract({
  method: 'PATCH',
  path: '/admin/v1/enterprises/:enterpriseId/recordings/:audioId',
  operationId: 'updateRecording',
  tag: 'recordings',
  summary: "Update a recording's fields",
  params: RecordingParams,
  body: { json: RecordingUpdateSchema },
  answer: { description: 'Updated (or already so)', payload: { json: UpdatedRecordingSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'recordings.write',
})

export const deleteRecordingContract = routeContract({
  method: 'DELETE',
  path: '/admin/v1/enterprises/:enterpriseId/recordings/:audioId',
  operationId: 'deleteRecording',
  tag: 'recordings',
  summary:
    'Delete a recording: a tombstone stays, its unconfirmed deliveries are cancelled, a recording.deleted push goes out',
  params: RecordingParams,
  answer: { description: 'Deleted', payload: { json: DeletedRecordingSchema } },
  refusals: WITH_ID,
  permission: 'recordings.write',
})

export const recordingContracts = [
  listRecordingsContract,
  ingestRecordingContract,
  attachTranscriptContract,
  updateRecordingContract,
  deleteRecordingContract,
] as const
