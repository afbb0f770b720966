import { ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import type { Queryable } from '../storage/database.js'
import {
  attachTranscriptContract,
  deleteRecordingContract,
  ingestRecordingContract,
  updateRecordingContract,
} from './recording-contract.js'
import {
  audioIdGenerator,
  checkDenoiseUrl,
  RecordingUpdate,
  TranscriptPart,
  toNewRecording,
} from './recording-input.js'
import { attachTranscript, deleteRecording, insertRecordings, updateRecording } from './recording-store.js'
import type { RecordingsContext } from './recordings-context.js'

/* The operators' recordings: add one, attach or replace its transcript, update it, delete it. */

const ingestRoute = defineRoute(ingestRecordingContract, (context: RecordingsContext) => {
  const newAudioId = audioIdGenerator(context.randomBytes)
  return async function ingest(request) {
    const enterpriseId = await existingEnterpriseId(context.db, request)
    const recording = toNewRecording(request.body, newAudioId)
    checkDenoiseUrl(recording.denoiseUrl, context.config.denoiseUrlAllowHttp)
    await context.db.transaction((tx) =>
      insertRecordings(tx, enterpriseId, [recording], context.recordingEvents),
    )
    return { audioId: recording.audioId }
  }
})

const attachTranscriptRoute = defineRoute(
  attachTranscriptContract,
  (context: RecordingsContext) =>
    async function attach(request) {
      const { enterpriseId, audioId } = recordingParams(request)
      const transcript = TranscriptPart.parse(request.body)
      await changeRecording(context.db, enterpriseId, audioId, (tx) =>
        attachTranscript(tx, enterpriseId, audioId, transcript, context.recordingEvents),
      )
      return { audioId }
    },
)

const updateRoute = defineRoute(
  updateRecordingContract,
  (context: RecordingsContext) =>
    async function update(request) {
      const { enterpriseId, audioId } = recordingParams(request)
      const changes = RecordingUpdate.parse(jsonObject(request.body))
      checkDenoiseUrl(changes.denoiseUrl, context.config.denoiseUrlAllowHttp)
      await changeRecording(context.db, enterpriseId, audioId, (tx) =>
        updateRecording(tx, enterpriseId, audioId, changes, context.recordingEvents),
      )
      return { updated: audioId }
    },
)

const deleteRoute = defineRoute(
  deleteRecordingContract,
  (context: RecordingsContext) =>
    async function remove(request) {
      const { enterpriseId, audioId } = recordingParams(request)
      await changeRecording(context.db, enterpriseId, audioId, (tx) =>
        deleteRecording(tx, enterpriseId, audioId, context.recordingEvents),
      )
      return { deleted: audioId }
    },
)

export const recordingAdminRoutes = [ingestRoute, attachTranscriptRoute, updateRoute, deleteRoute]

/** Runs a change of one recording in a transaction; 4040 when the enterprise has no such recording. */
async function changeRecording(
  db: RecordingsContext['db'],
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
