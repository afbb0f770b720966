/**
 * The operations the two-instance stress test interleaves, each through the admin client or the partner
 * API of the instance it is given, with the weight it is drawn with. Each resolves with what it touched.
 */
import { setTimeout as delay } from 'node:timers/promises'
import { AdminApiError } from '../../admin-client/admin-client.js'
import type { EventType } from '../../recordings/recording-events.js'
import {
  type Instance,
  pick,
  type Random,
  recordingLine,
  type StressEndpoint,
  type StressPartner,
  transcriptOf,
  type World,
} from './two-instance-stress-world.js'

export interface OpContext {
  world: World
  random: Random
  instance: Instance
  partner: StressPartner
}

type Op = (context: OpContext) => Promise<string>

const MAX_ENDPOINTS = 10
/** The latest recordings, which most operations pick. */
const HOT = 6

const importRecordings: Op = async ({ random, instance, partner }) => {
  const count = 1 + Math.floor(random() * 3)
  const lines: string[] = []
  const audioIds: string[] = []
  for (let i = 0; i < count; i++) {
    const n = partner.nextRecording++
    const audioId = `e${partner.enterpriseId}-r${n}`
    audioIds.push(audioId)
    lines.push(recordingLine(audioId, n, random() < 0.5))
  }
  for await (const _line of instance.admin.importRecordings(partner.enterpriseId, `${lines.join('\n')}\n`)) {
    // the summary comes last: the recordings are committed by then
  }
  partner.live.push(...audioIds)
  return audioIds.join(' ')
}

/** Mostly one of the latest recordings: several events of one recording in the queue at once. */
export function hotRecording(random: Random, partner: StressPartner): string | undefined {
  return pick(random, random() < 0.8 ? partner.live.slice(-HOT) : partner.live)
}

const updateRecording: Op = async ({ random, instance, partner }) => {
  const audioId = hotRecording(random, partner)
  if (!audioId) return 'none'
  await instance.admin.updateRecording(partner.enterpriseId, audioId, {
    title: `t${Math.floor(random() * 1e6)}`,
  })
  return audioId
}

const attachTranscript: Op = async ({ random, instance, partner }) => {
  const audioId = hotRecording(random, partner)
  if (!audioId) return 'none'
  await instance.admin.call('attachTranscript', {
    params: { enterpriseId: partner.enterpriseId, audioId },
    body: transcriptOf(Math.floor(random() * 1e6)),
  })
  return audioId
}

const deleteRecording: Op = async ({ random, instance, partner }) => {
  const audioId = hotRecording(random, partner)
  if (!audioId) return 'none'
  partner.live = partner.live.filter((id) => id !== audioId)
  partner.deleted.push(audioId)
  await instance.admin.deleteRecording(partner.enterpriseId, audioId)
  return audioId
}

/** A receipt callback the receivers did not make themselves: any recording, deleted ones too. */
const receipt: Op = async ({ world, random, instance, partner }) => {
  const audioId = random() < 0.8 ? hotRecording(random, partner) : pick(random, partner.deleted)
  if (!audioId) return 'none'
  return `${audioId} → ${await world.callBack(instance, partner, audioId)}`
}

/** An operator's replay: one failed or unconfirmed delivery, or the enterprise's whole range. */
const replay: Op = async ({ world, random, instance, partner }) => {
  if (random() < 0.5) {
    const to = new Date(Date.now() + 60_000).toISOString()
    const done = await instance.admin.replayDeliveries(
      partner.enterpriseId,
      new Date(world.startedAtMs - 60_000).toISOString(),
      to,
    )
    return `range: ${done.replayed}`
  }
  const rows = await instance.platform.context.db.query<{ delivery_id: number }>(
    `SELECT delivery_id::int FROM deliveries WHERE enterprise_id = $1 AND state IN ('failed', 'unconfirmed')
      ORDER BY delivery_id`,
    [partner.enterpriseId],
  )
  const chosen = pick(random, rows)
  if (!chosen) return 'none'
  await instance.admin.replayDelivery(chosen.delivery_id)
  return `delivery ${chosen.delivery_id}`
}

const replayUnreceipted: Op = async ({ world, random, instance, partner }) => {
  const since = new Date(Date.now() - (random() < 0.5 ? Date.now() - world.startedAtMs + 60_000 : 3_000))
  const done = await instance.admin.replayUnreceipted(partner.enterpriseId, since.toISOString())
  return `replayed ${done.replayed}, already scheduled ${done.alreadyScheduled}`
}

const endpointsOf = (world: World, partner: StressPartner) =>
  world.endpoints.filter((e) => e.enterpriseId === partner.enterpriseId && !e.removed)

const toggleEndpoint: Op = async ({ world, random, instance, partner }) => {
  const endpoint = pick(random, endpointsOf(world, partner))
  if (!endpoint) return 'none'
  endpoint.enabled = !endpoint.enabled
  await instance.admin.updateEndpoint(partner.enterpriseId, endpoint.endpointId, {
    enabled: endpoint.enabled,
  })
  return `endpoint ${endpoint.endpointId} ${endpoint.enabled ? 'enabled' : 'disabled'}`
}

/** An endpoint disabled through one instance and enabled again at once through the other. */
const flapEndpoint: Op = async ({ world, random, instance, partner }) => {
  const endpoint = pick(
    random,
    endpointsOf(world, partner).filter((e) => e.enabled),
  )
  if (!endpoint) return 'none'
  const other = world.instances.find((i) => i !== instance) ?? instance
  await instance.admin.updateEndpoint(partner.enterpriseId, endpoint.endpointId, { enabled: false })
  await delay(Math.floor(random() * 30))
  await other.admin.updateEndpoint(partner.enterpriseId, endpoint.endpointId, { enabled: true })
  return `endpoint ${endpoint.endpointId} disabled and enabled again`
}

/** A push URL's outage begins (503s, or a 410 that disables it at once), or ends and an operator enables it. */
const outage: Op = async ({ world, random, instance, partner }) => {
  const endpoint = pick(random, endpointsOf(world, partner))
  if (!endpoint) return 'none'
  if (endpoint.outage === undefined) {
    endpoint.outage = random() < 0.3 ? 'gone' : 'down'
    return `endpoint ${endpoint.endpointId} ${endpoint.outage}`
  }
  endpoint.outage = undefined
  await enableUrl(instance, endpoint)
  return `endpoint ${endpoint.endpointId} back, URL enabled`
}

/** A URL's outage ends and an operator enables it through one instance while the other imports. */
const recoverDuringImport: Op = async (context) => {
  const { world, random, instance, partner } = context
  const endpoint = pick(
    random,
    endpointsOf(world, partner).filter((e) => e.outage !== undefined),
  )
  if (!endpoint) return 'none'
  const other = world.instances.find((i) => i !== instance) ?? instance
  endpoint.outage = undefined
  const [, imported] = await Promise.all([
    enableUrl(instance, endpoint),
    importRecordings({ ...context, instance: other }),
  ])
  return `endpoint ${endpoint.endpointId} back, URL enabled during the import of ${imported}`
}

export async function enableUrl(instance: Instance, endpoint: StressEndpoint): Promise<void> {
  await instance.admin.enablePushUrl(endpoint.url).catch((error: unknown) => {
    if (!(error instanceof AdminApiError)) throw error
  })
}

const SUBSETS: EventType[][] = [
  ['recording.audio_ready', 'recording.updated', 'recording.deleted'],
  ['recording.transcript_ready', 'recording.deleted'],
]

/** An endpoint removed (one always stays) and, as often as not, another added in its place. */
const removeAndAdd: Op = async ({ world, random, instance, partner }) => {
  const endpoints = endpointsOf(world, partner)
  const removed = endpoints.length > 1 ? pick(random, endpoints) : undefined
  if (removed) await world.removeEndpoint(instance, removed)
  if (random() < 0.5 && endpoints.length <= MAX_ENDPOINTS - 1) {
    const added = await world.addEndpoint(
      instance,
      partner,
      random() < 0.3 ? pick(random, SUBSETS) : undefined,
    )
    return `removed endpoint ${removed?.endpointId ?? 'none'}, added endpoint ${added.endpointId}`
  }
  return `removed endpoint ${removed?.endpointId ?? 'none'}`
}

export const OPS: readonly { name: string; weight: number; run: Op }[] = [
  { name: 'import', weight: 14, run: importRecordings },
  { name: 'update', weight: 12, run: updateRecording },
  { name: 'transcript', weight: 6, run: attachTranscript },
  { name: 'delete', weight: 6, run: deleteRecording },
  { name: 'receipt', weight: 10, run: receipt },
  { name: 'replay', weight: 4, run: replay },
  { name: 'unreceipted-replay', weight: 3, run: replayUnreceipted },
  { name: 'endpoint-toggle', weight: 6, run: toggleEndpoint },
  { name: 'endpoint-flap', weight: 4, run: flapEndpoint },
  { name: 'url-outage', weight: 6, run: outage },
  { name: 'url-recovery-during-import', weight: 3, run: recoverDuringImport },
  { name: 'endpoint-remove-add', weight: 4, run: removeAndAdd },
]

export function drawOp(random: Random): (typeof OPS)[number] {
  const total = OPS.reduce((sum, op) => sum + op.weight, 0)
  let roll = random() * total
  for (const op of OPS) {
    roll -= op.weight
    if (roll < 0) return op
  }
  return OPS[0] as (typeof OPS)[number]
}
