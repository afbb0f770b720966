import { positiveInteger } from '@earshot/support/cli'
import { Command, Option } from 'commander'
import type { AdminAnswer } from '../admin-client/admin-client.js'
import type { JsonFlag } from './access-options.js'
import {
  CommandFailure,
  enterpriseIdArgument,
  printJson,
  printLines,
  reportUsageErrors,
  runClient,
  table,
} from './client-command.js'

type ErasureSummary = AdminAnswer<'listErasures'>['erasures'][number]
type ErasureDetail = AdminAnswer<'showErasure'>

interface CreateOptions extends JsonFlag {
  enterprise: number
  deviceUid?: string
  audioId?: string[]
  reason?: string
}

const erasureIdArgument = positiveInteger('an erasure id')

/** `earshot erasure create|list|show|report`: erasing recordings everywhere the platform keeps them. */
export function erasureCommand(): Command {
  return reportUsageErrors(
    new Command('erasure')
      .description(
        "erase a device's recordings (or recordings by audioId) everywhere the platform keeps them; follow each erasure and print its signed report",
      )
      .addCommand(createCommand())
      .addCommand(listCommand())
      .addCommand(showCommand())
      .addCommand(reportCommand()),
  )
}

function createCommand(): Command {
  return new Command('create')
    .description(
      'erase recordings: each is deleted and pushed as recording.deleted to every endpoint, its audio and the answers kept from its pushes removed; it runs in the background',
    )
    .requiredOption('--enterprise <id>', 'the enterprise whose recordings are erased', enterpriseIdArgument)
    .addOption(
      new Option(
        '--device-uid <uid>',
        'erase every recording of this device (it is not stored: only its hash)',
      ).conflicts('audioId'),
    )
    .option('--audio-id <audioId...>', 'erase these recordings (deleted ones too: their kept copies go)')
    .option('--reason <text>', 'why, for the record (a ticket number); never the person’s data')
    .option('--json', 'print {"erasureId", "recordings"} as JSON')
    .action(async (options: CreateOptions, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        if (options.deviceUid === undefined && options.audioId === undefined) {
          throw new CommandFailure('give what to erase: --device-uid UID or --audio-id ID…')
        }
        const body = {
          ...(options.deviceUid !== undefined
            ? { deviceUid: options.deviceUid }
            : { audioIds: options.audioId }),
          ...(options.reason !== undefined && { reason: options.reason }),
        }
        const created = await client.call('createErasure', {
          params: { enterpriseId: options.enterprise },
          body,
        })
        if (options.json) return printJson({ erasureId: created.erasureId, recordings: created.recordings })
        printLines(
          `Erasure ${created.erasureId} requested: ${recordings(created.recordings)} of enterprise ${options.enterprise}.`,
          `Follow it with: earshot erasure show ${created.erasureId}`,
        )
      })
    })
}

function listCommand(): Command {
  return new Command('list')
    .description('list erasures, newest first (at most 500); retention runs among them')
    .option('--enterprise <id>', "only this enterprise's erasures", enterpriseIdArgument)
    .option('--json', 'print the erasures as a JSON array (erasureId, enterpriseId, kind, state, …)')
    .action(async (options: JsonFlag & { enterprise?: number }, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const query = options.enterprise === undefined ? {} : { enterpriseId: String(options.enterprise) }
        const { erasures } = await client.call('listErasures', { query })
        if (options.json) return printJson(erasures)
        if (erasures.length === 0) return printLines('No erasures.')
        printLines(
          ...table(
            ['ID', 'ENTERPRISE', 'KIND', 'STATE', 'RECORDINGS', 'REQUESTED', 'BY', 'SUBJECT', 'REASON'],
            erasures.map((erasure) => [
              String(erasure.erasureId),
              String(erasure.enterpriseId),
              erasure.kind,
              erasure.state,
              String(erasure.recordings),
              erasure.requestedAt,
              erasure.requestedBy.id,
              subjectOf(erasure, 12),
              erasure.reason,
            ]),
          ),
        )
      })
    })
}

function showCommand(): Command {
  return new Command('show')
    .description("an erasure, where it stands, and each endpoint's deletions, acknowledged and confirmed")
    .argument('<erasureId>', 'the erasure, as `earshot erasure list` shows it', erasureIdArgument)
    .option(
      '--json',
      'print the erasure as JSON, with endpoints [{"endpointId", "deletions", "acknowledged", "confirmed"}]',
    )
    .action(async (erasureId: number, options: JsonFlag, command: Command) => {
      await runClient(command, { json: Boolean(options.json) }, async (client) => {
        const erasure = await client.call('showErasure', { params: { erasureId } })
        if (options.json) return printJson(erasure)
        printLines(...erasureLines(erasure))
      })
    })
}

function reportCommand(): Command {
  return new Command('report')
    .description(
      'print the signed report of an erasure, {report, signature}, as indented JSON: the signature is Ed25519 (base64url) over the RFC 8785 canonical JSON of report, verified with the key at /.well-known/earshot-erasure-key on the partner listener',
    )
    .argument('<erasureId>', 'the erasure, as `earshot erasure list` shows it', erasureIdArgument)
    .action(async (erasureId: number, _options: unknown, command: Command) => {
      await runClient(command, { json: false }, async (client) => {
        const signed = await client.call('erasureReport', { params: { erasureId } })
        printLines(JSON.stringify(signed, null, 2))
      })
    })
}

const STATE_MEANS: Record<ErasureSummary['state'], string> = {
  running: 'running: recordings are being deleted, or their deletions wait for an endpoint’s acknowledgement',
  complete: 'complete: every recording deleted, its audio and copies gone, every deletion acknowledged',
  confirmed: 'confirmed: every partner that had a recording also confirmed erasing it',
}

/** An erasure in lines: its fields, then a table of its endpoints' progress. */
function erasureLines(erasure: ErasureDetail): string[] {
  const lines = [
    `Erasure ${erasure.erasureId} of enterprise ${erasure.enterpriseId} (${erasure.kind})`,
    `  state:       ${STATE_MEANS[erasure.state]}`,
    `  recordings:  ${erasure.recordings}`,
    `  subject:     ${subjectOf(erasure)}`,
    `  reason:      ${erasure.reason || '-'}`,
    `  requested:   ${erasure.requestedAt} by ${erasure.requestedBy.name}`,
    `  deleted:     ${erasure.deletedAt ?? '-'}`,
    `  completed:   ${erasure.completedAt ?? '-'}`,
    `  confirmed:   ${erasure.confirmedAt ?? '-'}`,
  ]
  if (erasure.endpoints.length === 0) return [...lines, 'No endpoint was pushed a deletion.']
  const rows = erasure.endpoints.map((each) => [
    String(each.endpointId),
    String(each.deletions),
    String(each.acknowledged),
    String(each.confirmed),
  ])
  return [...lines, ...table(['ENDPOINT', 'DELETIONS', 'ACKNOWLEDGED', 'CONFIRMED'], rows)]
}

/** Who a device erasure is about, as its subjectHash (shortened in a table); '-' for the others. */
function subjectOf(erasure: ErasureSummary, length?: number): string {
  if (erasure.subjectHash === null) return '-'
  return length === undefined ? erasure.subjectHash : `${erasure.subjectHash.slice(0, length)}…`
}

const recordings = (count: number) => `${count} ${count === 1 ? 'recording' : 'recordings'}`
