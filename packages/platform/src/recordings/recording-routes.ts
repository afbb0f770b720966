import { ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import Type from 'typebox'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import { EnterpriseParams, existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { idParam, jsonObject, WITH_BODY, WITH_ID } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import type { RouteSpec } from '../http/route-spec.js'
import type { Queryable } from '../storage/database.js'
import { DeletedRecordingSchema, StoredRecordingSchema, UpdatedRecordingSchema } from './recording-answers.js'
import {
  audioIdGenerator,
  checkDenoiseUrl,
  RecordingInputSchema,
  RecordingUpdate,
  RecordingUpdateSchema,
  TranscriptPart,
  TranscriptPartSchema,
  toNewRecording,
} from './recording-input.js'
import { attachTranscript, deleteRecording, insertRecordings, updateRecording } from './recording-store.js'

/* The operators' recordings: add one, attach or replace its transcript, update it, delete it. */

export const RecordingParams = Type.Object({
  ...EnterpriseParams.properties,
  audioId: Type.String({ minLength: 1, description: 'the recording' }),
})

const ingestRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('ingestRecording'),
  tag: 'recordings',
  summary: 'Ingest one recording (and schedule its pushes)',
  params: EnterpriseParams,
  body: { json: RecordingInputSchema },
  answer: { status: 201, description: 'Stored', payload: { json: StoredRecordingSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) => {
    const newAudioId = audioIdGenerator(context.randomBytes)
    return async function ingest(request, reply) {
      const enterpriseId = await existingEnterpriseId(context.db, request)
      const recording = toNewRecording(request.body, newAudioId)
      checkDenoiseUrl(recording.denoiseUrl, context.config.denoiseUrlAllowHttp)
      await context.db.transaction((tx) =>
        insertRecordings(tx, enterpriseId, [recording], context.recordingEvents),
      )
      return reply.code(201).send({ audioId: recording.audioId })
    }
  },
}

const attachTranscriptRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('attachTranscript'),
  tag: 'recordings',
  summary: "Attach or replace a recording's transcript (a transcript_ready push)",
  params: RecordingParams,
  body: { json: TranscriptPartSchema },
  answer: { description: 'Stored', payload: { json: StoredRecordingSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function attach(request) {
      const { enterpriseId, audioId } = recordingParams(request)
      const transcript = TranscriptPart.parse(request.body)
      await changeRecording(context.db, enterpriseId, audioId, (tx) =>
        attachTranscript(tx, enterpriseId, audioId, transcript, context.recordingEvents),
      )
      return { audioId }
    },
}

const updateRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('updateRecording'),
  tag: 'recordings',
  summary: "Update a recording's fields",
  params: RecordingParams,
  body: { json: RecordingUpdateSchema },
  answer: { description: 'Updated (or already so)', payload: { json: UpdatedRecordingSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function update(request) {
      const { enterpriseId, audioId } = recordingParams(request)
      const changes = RecordingUpdate.parse(jsonObject(request.body))
      checkDenoiseUrl(changes.denoiseUrl, context.config.denoiseUrlAllowHttp)
      await changeRecording(context.db, enterpriseId, audioId, (tx) =>
        updateRecording(tx, enterpriseId, audioId, changes, context.recordingEvents),
      )
      return { updated: audioId }
    },
}

const deleteRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('deleteRecording'),
  tag: 'recordings',
  summary:
    'Delete a recording: a tombstone stays, its unconfirmed deliveries are cancelled, a recording.deleted push goes out',
  params: RecordingParams,
  answer: { description: 'Deleted', payload: { json: DeletedRecordingSchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function remove(request) {
      const { enterpriseId, audioId } = recordingParams(request)
      await changeRecording(context.db, enterpriseId, audioId, (tx) =>
        deleteRecording(tx, enterpriseId, audioId, context.recordingEvents),
      )
      return { deleted: audioId }
    },
}

export const recordingAdminRoutes = [ingestRoute, attachTranscriptRoute, updateRoute, deleteRoute]

/** Runs a change of one recording in a transaction; 4040 when the enterprise has no such recording. */
async function changeRecording(
  db: PlatformContext['db'],
  enterpriseId: number,
  audioId: string,
  change: (tx: Queryable) => Promise<boolean>,
): Promise<void> {
  // An audioId holding U+0000 cannot exist (and PostgreSQL text cannot hold it).
  if (!audioId.includes('\u0000') && (await db.transaction(change))) return
  throw new ApiError(
    ResponseCode.NOT_FOUND,
    `enterprise ${enterpriseId} has no recording ${JSON.stringify(audioId)}`,
  )
}

export function recordingParams(request: FastifyRequest): { enterpriseId: number; audioId: string } {
  return {
    enterpriseId: idParam(request, 'enterpriseId'),
    audioId: (request.params as { audioId: string }).audioId,
  }
}
