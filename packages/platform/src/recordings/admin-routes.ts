import { ResponseCode } from '@earshot/protocol'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { PlatformContext } from '../context.js'
import { existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import type { Queryable } from '../storage/database.js'
import { audioIdGenerator, RecordingUpdate, TranscriptPart, toNewRecording } from './recording-input.js'
import { attachTranscript, deleteRecording, insertRecordings, updateRecording } from './recording-store.js'

/** The operators' recordings: add one, attach or replace its transcript, update it, delete it. */
export function recordingAdminRoutes(app: FastifyInstance, context: PlatformContext, prefix: string): void {
  const { db, recordingEvents: events } = context
  const newAudioId = audioIdGenerator(context.randomBytes)
  const path = `${prefix}/enterprises/:enterpriseId/recordings`

  app.post(path, async (request, reply) => {
    const enterpriseId = await existingEnterpriseId(db, request)
    const recording = toNewRecording(request.body, newAudioId)
    await db.transaction((tx) => insertRecordings(tx, enterpriseId, [recording], events))
    return reply.code(201).send({ audioId: recording.audioId })
  })

  app.put(`${path}/:audioId/transcript`, async (request) => {
    const { enterpriseId, audioId } = recordingParams(request)
    const transcript = TranscriptPart.parse(request.body)
    await changeRecording(enterpriseId, audioId, (tx) =>
      attachTranscript(tx, enterpriseId, audioId, transcript, events),
    )
    return { audioId }
  })

  app.patch(`${path}/:audioId`, async (request) => {
    const { enterpriseId, audioId } = recordingParams(request)
    const changes = RecordingUpdate.parse(jsonObject(request.body))
    await changeRecording(enterpriseId, audioId, (tx) =>
      updateRecording(tx, enterpriseId, audioId, changes, events),
    )
    return { updated: audioId }
  })

  app.delete(`${path}/:audioId`, async (request) => {
    const { enterpriseId, audioId } = recordingParams(request)
    await changeRecording(enterpriseId, audioId, (tx) => deleteRecording(tx, enterpriseId, audioId, events))
    return { deleted: audioId }
  })

  /** Runs a change of one recording in a transaction; 4040 when the enterprise has no such recording. */
  async function changeRecording(
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
}

function recordingParams(request: FastifyRequest): { enterpriseId: number; audioId: string } {
  return {
    enterpriseId: idParam(request, 'enterpriseId'),
    audioId: (request.params as { audioId: string }).audioId,
  }
}
