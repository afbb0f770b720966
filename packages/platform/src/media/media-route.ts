import { fetchAudioContract, ResponseCode } from '@earshot/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PartnerEnv } from '../auth/envelope-request.js'
import { ApiError } from '../http/api-error.js'
import { InFlight } from '../http/in-flight.js'
import { defineRoute } from '../http/route-spec.js'
import { type ByteRange, rangeOf } from './byte-range.js'
import type { MediaContext } from './media-context.js'
import type { MediaGrant } from './media-links.js'

interface StoredAudioRow {
  store_key: string
  sha256: string
  bytes: number | string
  content_type: string
  disabled: boolean
}

/** GET (and HEAD) /media/v1/:link: the stored audio a signed link grants, whole or by range. */
export const mediaRoute = defineRoute(fetchAudioContract, ({ context }: PartnerEnv<MediaContext>) => {
  const lookUp = storedAudioLookUp(context)
  const allowed = new Set(context.config.mediaAudioTypes)
  const downloads = new InFlight(DOWNLOAD_RETRY_AFTER_SECONDS)
  return async function fetchAudio(request, reply) {
    // Never rendered as a page, whatever a browser would make of the bytes; refusals included.
    reply.headers({ 'x-content-type-options': 'nosniff', 'content-security-policy': 'sandbox' })
    const { link } = request.params as { link: string }
    const { grant, row } = await grantedAudio(context, lookUp, link)
    const size = Number(row.bytes)
    const etag = `"${row.sha256}"`
    // A file stored with a type no longer allowed goes as bytes of no particular type.
    const contentType = allowed.has(row.content_type) ? row.content_type : 'application/octet-stream'
    reply.headers({
      'content-type': contentType,
      'accept-ranges': 'bytes',
      etag,
      'repr-digest': `sha-256=:${Buffer.from(row.sha256, 'hex').toString('base64')}:`,
      'cache-control': 'private',
      'content-disposition': `attachment; filename="${fileName(grant.audioId, contentType)}"`,
    })
    if (matchesAny(request.headers['if-none-match'], etag)) return reply.code(304).send()
    const ifRange = request.headers['if-range']
    const range = ifRange === undefined || ifRange === etag ? rangeOf(request.headers.range, size) : undefined
    if (range === 'unsatisfiable') {
      return reply.code(416).header('content-range', `bytes */${size}`).send()
    }
    const file = { key: row.store_key, size, range }
    return sendBytes(context, request, reply, file, () => downloadSlot(context, downloads, link, grant))
  }
})

/** A download's slot frees when its reader finishes or is cut (EARSHOT_WRITE_TIMEOUT): soon, or not for long. */
const DOWNLOAD_RETRY_AFTER_SECONDS = 5

/** Counts a download under its link and its enterprise until its answer closes; 4290 past either cap. */
function downloadSlot(context: MediaContext, downloads: InFlight, link: string, grant: MediaGrant) {
  const { mediaDownloadsPerLink, mediaDownloadsPerEnterprise } = context.config
  return downloads.take([
    {
      key: `link ${link}`,
      max: mediaDownloadsPerLink,
      refusal: (max) =>
        `this media link has ${max} downloads in progress, the most it may have at once (EARSHOT_MEDIA_DOWNLOADS_PER_LINK): retry after Retry-After seconds`,
    },
    {
      key: `enterprise ${grant.enterpriseId}`,
      max: mediaDownloadsPerEnterprise,
      refusal: (max) =>
        `the enterprise has ${max} downloads in progress, the most it may have at once (EARSHOT_MEDIA_DOWNLOADS_PER_ENTERPRISE): retry after Retry-After seconds`,
    },
  ])
}

/** How long a recording's stored audio, as looked up, answers its links: a replacement, deletion or disable shows within this. */
const LOOK_UP_FRESH_MS = 1000
const LOOK_UP_CACHED = 10_000

type LookUp = (grant: MediaGrant) => Promise<StoredAudioRow | undefined>

/**
 * The stored audio of a recording, read at most once a second per recording: a partner reading a long file
 * by ranges sends a request per range, and each would otherwise cost a database round trip. Forgotten when
 * any instance commits a replacement or a deletion (its NOTIFY); a link to another file than the one
 * remembered is looked up again at once.
 */
function storedAudioLookUp(context: MediaContext): LookUp {
  const cached = new Map<
    string,
    { at: number; sha256: string | undefined; row: Promise<StoredAudioRow | undefined> }
  >()
  let changes = context.media.changes
  return async ({ enterpriseId, audioId, sha256 }) => {
    if (changes !== context.media.changes) {
      changes = context.media.changes
      cached.clear()
    }
    const key = `${enterpriseId}\u0000${audioId}`
    const now = context.clock()
    const hit = cached.get(key)
    if (hit && now - hit.at < LOOK_UP_FRESH_MS && hit.sha256 === sha256) return hit.row
    if (cached.size >= LOOK_UP_CACHED) cached.clear()
    const row = context.db
      .query<StoredAudioRow>(
        `SELECT a.store_key, a.sha256, a.bytes, a.content_type, e.disabled_at IS NOT NULL AS disabled
           FROM recording_audio a JOIN enterprises e USING (enterprise_id)
          WHERE a.audio_id = $1 AND a.enterprise_id = $2`,
        [audioId, enterpriseId],
      )
      .then(([found]) => found)
    row.catch(() => cached.delete(key))
    cached.set(key, { at: now, sha256, row })
    const found = await row
    // Remembered under the file it names, so that a link to that file finds it.
    cached.set(key, { at: now, sha256: found?.sha256, row })
    return found
  }
}

async function grantedAudio(context: MediaContext, lookUp: LookUp, link: string) {
  const checked = await context.media.links.check(link)
  if (!checked.ok && checked.reason === 'expired') {
    const at = new Date(checked.grant.expiresAt * 1000).toISOString()
    throw new ApiError(
      ResponseCode.FORBIDDEN,
      `this media link expired at ${at}: query the recording again for a fresh link`,
    )
  }
  if (!checked.ok) {
    throw new ApiError(
      ResponseCode.FORBIDDEN,
      'this media link is not valid: use a denoiseUrl exactly as a query, push or change feed answer gave it',
    )
  }
  const { grant } = checked
  const row = await lookUp(grant)
  if (row?.disabled) throw new ApiError(ResponseCode.FORBIDDEN, 'the enterprise is disabled')
  if (!row || row.sha256 !== grant.sha256) throw gone()
  return { grant, row }
}

async function sendBytes(
  context: MediaContext,
  request: FastifyRequest,
  reply: FastifyReply,
  file: { key: string; size: number; range: ByteRange | undefined },
  takeSlot: () => () => void,
) {
  const { key, size, range } = file
  const length = range ? range.end - range.start + 1 : size
  if (request.method === 'HEAD' || length === 0) {
    reply.header('content-length', String(length))
    if (range) reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${size}`)
    return reply.send()
  }
  reply.raw.once('close', takeSlot())
  reply.header('content-length', String(length))
  if (range) reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${size}`)
  const bytes = await context.media.store.read(key, range)
  // Removed between the look-up and the read: its audio was replaced or the recording deleted.
  if (!bytes) throw gone()
  return reply.send(bytes)
}

function gone(): ApiError {
  return new ApiError(
    ResponseCode.NOT_FOUND,
    'the recording was deleted or its audio replaced since this link was made: query it again',
  )
}

function matchesAny(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  return header.split(',').some((tag) => {
    const given = tag.trim().replace(/^W\//, '')
    return given === etag || given === '*'
  })
}

const EXTENSIONS: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp4': 'm4a',
  'audio/aac': 'aac',
  'audio/ogg': 'ogg',
  'audio/opus': 'opus',
  'audio/flac': 'flac',
  'audio/webm': 'webm',
}

function fileName(audioId: string, contentType: string): string {
  return `${audioId.replace(/[^A-Za-z0-9._-]/g, '_')}.${EXTENSIONS[contentType] ?? 'audio'}`
}
