import { Readable } from 'node:stream'
import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { outsideChange } from '../audit/audited-changes.js'
import { existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import { recordingParams } from '../recordings/recording-routes.js'
import {
  recordingExists as recordingExistsIn,
  type StoredAudioChange,
  setStoredAudio,
} from '../recordings/recording-store.js'
import type { Queryable } from '../storage/database.js'
import type { MediaContext } from './media-context.js'
import { uploadAudioContract } from './media-contract.js'
import { MediaTooLargeError, type StoredFile } from './media-store.js'
import { saveStoredAudio } from './stored-audio.js'
import { dropUploadClaim, storeClaimed } from './upload-claims.js'

/**
 * Audio uploads' content types, handed over as the request stream; which of them are allowed
 * (EARSHOT_MEDIA_AUDIO_TYPES) is checked before (requireAudioType) and again by the route.
 */
export const AUDIO_TYPES = /^audio\/[A-Za-z0-9][\w.+-]*\s*(;.*)?$/i

/** PUT …/recordings/:audioId/audio: the raw bytes become the recording's audio, stored by Earshot. */
export const audioUploadRoute = defineRoute(
  uploadAudioContract,
  (context: MediaContext) =>
    async function uploadAudio(request) {
      const { enterpriseId, audioId } = recordingParams(request)
      await existingEnterpriseId(context.db, request)
      const contentType = requireAudioType(request.headers['content-type'], context.config.mediaAudioTypes)
      if (!(request.body instanceof Readable))
        throw new ApiError(ResponseCode.INVALID_REQUEST, 'send the audio as the request body')
      const recordDuration = durationOf(request.query)
      const limit = context.config.mediaMaxBytes
      if (!(await recordingExists(context, enterpriseId, audioId))) throw noRecording(enterpriseId, audioId)
      const key = `${enterpriseId}/${context.randomBytes(16).toString('hex')}`
      const owner = { key, enterpriseId, audioId }
      // The claim is bookkeeping, not the change: it commits first, on its own, and the trail's row is
      // appended with the transaction below that names the file.
      const body = request.body as Readable
      const stored = await outsideChange(() =>
        storeClaimed(context.db, context.media.store, owner, body, { maxBytes: limit, contentType }),
      ).catch((error: unknown) => {
        throw error instanceof MediaTooLargeError ? tooLarge(error) : error
      })
      // Should the transaction fail, the file and its claim stay: had it committed after all (its answer
      // lost), removing the file now would lose the recording's audio. Otherwise the claim is let go after
      // its grace, and the orphan sweep removes the file.
      const upload = { enterpriseId, audioId, key, stored, contentType, recordDuration }
      const change = await context.db.transaction((tx) => recordAudio(context, tx, upload))
      if (change === 'missing') {
        await context.media.store.remove(key)
        await outsideChange(() => dropUploadClaim(context.db, key))
        throw noRecording(enterpriseId, audioId)
      }
      return { audioId, bytes: stored.bytes, sha256: stored.sha256, contentType }
    },
)

interface Upload {
  enterpriseId: number
  audioId: string
  key: string
  stored: StoredFile
  contentType: string
  recordDuration: number | undefined
}

/** The recording's audio part becomes the stored file; the file it replaces is listed for removal (sql/000016.sql). */
async function recordAudio(context: MediaContext, tx: Queryable, upload: Upload): Promise<StoredAudioChange> {
  const { enterpriseId, audioId, key, stored, contentType, recordDuration } = upload
  const change = await setStoredAudio(
    tx,
    enterpriseId,
    audioId,
    { sha256: stored.sha256, recordDuration },
    context.recordingEvents,
  )
  if (change === 'missing') return change
  await saveStoredAudio(tx, [{ audioId, enterpriseId, key, ...stored, contentType }])
  return change
}

/**
 * The upload's audio type, its parameters dropped; refused with 4150 naming the rule unless it is one of
 * `allowed`. The admin listener calls it before the body is parsed too, so that another type (text/html,
 * application/octet-stream) is told the audio rule, not the JSON routes' one.
 */
export function requireAudioType(header: string | undefined, allowed: readonly string[]): string {
  const type = header?.split(';', 1)[0]?.trim().toLowerCase()
  if (!type || !allowed.includes(type)) {
    throw new ApiError(
      ResponseCode.UNSUPPORTED_MEDIA_TYPE,
      `Content-Type must be audio/<subtype>, one of ${allowed.join(', ')} (EARSHOT_MEDIA_AUDIO_TYPES), with the audio as the body; got ${JSON.stringify(header ?? 'none')}`,
    )
  }
  return type
}

function durationOf(query: unknown): number | undefined {
  const raw = (query as { recordDuration?: unknown }).recordDuration
  if (raw === undefined) return undefined
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) {
    throw new InvalidParameterError(
      'recordDuration',
      'must be a whole number (the duration, as in the query answers)',
    )
  }
  return Number(raw)
}

async function recordingExists(
  context: MediaContext,
  enterpriseId: number,
  audioId: string,
): Promise<boolean> {
  if (audioId.includes('\u0000')) return false
  return recordingExistsIn(context.db, enterpriseId, audioId)
}

function noRecording(enterpriseId: number, audioId: string): ApiError {
  return new ApiError(
    ResponseCode.NOT_FOUND,
    `enterprise ${enterpriseId} has no recording ${JSON.stringify(audioId)}`,
  )
}

/** A declared Content-Length over the limit is refused (4130) before the body is read. */
export function requireAudioLength(request: FastifyRequest, limit: number): void {
  if (Number(request.headers['content-length'] ?? 0) > limit) {
    throw tooLarge(new MediaTooLargeError(limit))
  }
}

/** The rest of the body is not read: the connection closes after the answer. */
function tooLarge(error: MediaTooLargeError): ApiError {
  return new ApiError(ResponseCode.PAYLOAD_TOO_LARGE, error.message, { connection: 'close' })
}
