import { ResponseCode, routeContract } from '@earshot/protocol'
import { EnterpriseParams } from '../enterprises/enterprise-contract.js'
import { WITH_BODY } from '../http/admin-refusals.js'
import { RecordingInputSchema } from '../recordings/recording-input.js'
import { ImportLineSchema } from './import-answers.js'

/** JSON Lines content types: the body is handed over as the request stream, read line by line. */
export const JSON_LINES_TYPES = ['application/x-ndjson', 'application/jsonl']

/** POST …/recordings/import: a JSON Lines file of recordings, answered with NDJSON progress then its summary. */
export const importRecordingsContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/recordings/import',
  operationId: 'importRecordings',
  tag: 'recordings',
  summary: 'Import a JSON Lines file of recordings',
  description:
    'The body is streamed and read line by line (up to EARSHOT_ADMIN_BODY_LIMIT; a line up to 4 MiB). Every line is validated before anything is written: a bad line refuses the file (4001) and nothing is imported; msg lists the first 10 bad lines, one per line of msg, each with its line number (and its column, for a line that is not JSON). A file that is a JSON array is refused as such: it must be one recording object per line. A line whose audioId is stored with the same content is skipped; one that only adds a transcript attaches it.',
  params: EnterpriseParams,
  body: { lines: RecordingInputSchema, types: JSON_LINES_TYPES },
  answer: {
    description:
      'Every line was valid: the import commits in chunks of 500 and streams a progress line after each; the last line is the summary, or an error if it stopped part-way (importing the same file again completes it).',
    payload: { lines: ImportLineSchema, types: ['application/x-ndjson'] },
  },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'recordings.write',
})
