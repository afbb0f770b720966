import { ResponseCode, routeContract } from '@earshot/protocol'
import Type from 'typebox'
import { WITH_BODY } from '../http/admin-refusals.js'
import { RecordingParams } from '../recordings/recording-contract.js'

/* The operators' media routes: a recording's audio uploaded, and the key signing media links rotated. */

export const UploadedAudioSchema = Type.Object({
  audioId: Type.String(),
  bytes: Type.Integer({ minimum: 0 }),
  sha256: Type.String({ description: 'the file, lower-case hex' }),
  contentType: Type.String(),
})

const UploadQuery = Type.Object({
  recordDuration: Type.Optional(
    Type.String({
      pattern: '^\\d{1,15}$',
      description: 'the recording duration; default: kept as it was (0 if none)',
    }),
  ),
})

const RotationSchema = Type.Object(
  {
    retireOthers: Type.Optional(
      Type.Boolean({ description: 'links signed with the earlier keys stop working (a key has leaked)' }),
    ),
  },
  { additionalProperties: false },
)

export const RotatedLinkKeySchema = Type.Object({
  keyId: Type.Integer({ minimum: 1, description: 'the key new links are signed with' }),
  retiredOthers: Type.Boolean(),
})

/** POST /admin/v1/media/rotate-link-key: new links are signed with a new key, on every instance within seconds. */
export const rotateLinkKeyContract = routeContract({
  method: 'POST',
  path: '/admin/v1/media/rotate-link-key',
  operationId: 'rotateLinkKey',
  tag: 'media',
  summary: 'Sign media links with a new key',
  description:
    'Every instance signs with the new key within 5 s. Links signed before keep working until they expire, unless retireOthers is true: then they answer 4030 (on every instance within 5 s).',
  body: { json: RotationSchema },
  answer: { description: 'Rotated', payload: { json: RotatedLinkKeySchema } },
  refusals: WITH_BODY,
  permission: 'media.write',
})
/** PUT …/recordings/:audioId/audio: the raw bytes become the recording's audio, stored by Earshot. */
export const uploadAudioContract = routeContract({
  method: 'PUT',
  path: '/admin/v1/enterprises/:enterpriseId/recordings/:audioId/audio',
  operationId: 'uploadAudio',
  tag: 'recordings',
  summary: "Upload a recording's audio (stored by Earshot; partners get signed links to it)",
  description:
    'The body is streamed to the store and hashed on the way, up to EARSHOT_MEDIA_MAX_BYTES; the file is used only once whole. A first audio part pushes recording.audio_ready; a different one replaces it and pushes recording.updated (the old file is removed once that commits).',
  params: RecordingParams,
  query: UploadQuery,
  body: { binary: ['audio/*'] },
  answer: { description: 'Stored', payload: { json: UploadedAudioSchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND, ResponseCode.URI_TOO_LONG],
  permission: 'recordings.write',
})

export const mediaContracts = [uploadAudioContract, rotateLinkKeyContract] as const
