import { component } from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import type { Holds, Same } from '../http/answer-fields.js'
import type { ImportProgressLine } from './json-lines-import.js'

/** One line of an import's application/x-ndjson answer. */
export const ImportLineSchema = Type.Union(
  [
    Type.Object(
      {
        progress: Type.Integer({ minimum: 0, description: 'recordings committed so far' }),
        total: Type.Integer({ minimum: 1, description: 'valid recordings in the file' }),
      },
      { title: 'progress' },
    ),
    Type.Object(
      {
        imported: Type.Integer({ minimum: 0, description: 'new recordings, and transcripts attached' }),
        skipped: Type.Integer({ minimum: 0, description: 'lines already stored with the same content' }),
      },
      { title: 'summary (the last line of a complete import)' },
    ),
    Type.Object(
      {
        error: Type.Object({
          code: Type.Integer(),
          msg: Type.String({ description: 'what failed, and how many lines were committed before it' }),
        }),
      },
      { title: 'error (the last line of an import that stopped part-way)' },
    ),
  ],
  component({ name: 'ImportLine', description: "One line of an import's answer." }),
)

/** Compiles only while the schema describes exactly the lines the import answers with. */
export type SchemaDescribesItsType = Holds<Same<Static<typeof ImportLineSchema>, ImportProgressLine>>
