import { type AdminOperationId, adminContracts } from './admin-contracts.js'

/** How the client reads an operation's success: JSON, text, or a stream of JSON Lines. */
export type AnswerKind = 'json' | 'text' | 'lines'

export type AdminOperations = Record<AdminOperationId, { method: string; path: string; answer: AnswerKind }>

/** Where each admin operation is served and how it answers, read from the contracts. */
export const adminOperations = Object.fromEntries(
  adminContracts.map(({ operationId, method, path, answer }) => {
    const payload = ('payload' in answer ? answer.payload : undefined) ?? {}
    const kind: AnswerKind = 'text' in payload ? 'text' : 'lines' in payload ? 'lines' : 'json'
    return [operationId, { method, path, answer: kind }]
  }),
) as AdminOperations
