import assert from 'node:assert/strict'
import { test } from 'node:test'
import {
  chosenLogger,
  defaultLogger,
  type MessageFirstLogger,
  type ReceiverLogger,
} from './receiver-logger.js'

test('the logger options: log in pino shape first, then the message-first logger adapted, else the default', {
  timeout: 5_000,
}, () => {
  const seen: unknown[][] = []
  const log: ReceiverLogger = {
    info: (details, message) => seen.push(['log', details, message]),
    warn: () => {},
    error: () => {},
  }
  const logger: MessageFirstLogger = {
    info: (message, details) => seen.push(['logger', message, details]),
    warn: () => {},
    error: () => {},
  }
  chosenLogger({ log, logger }).info({ audioId: 'a' }, 'receipt confirmed')
  chosenLogger({ logger }).info({ audioId: 'b' }, 'receipt confirmed')
  assert.deepEqual(seen, [
    ['log', { audioId: 'a' }, 'receipt confirmed'],
    ['logger', 'receipt confirmed', { audioId: 'b' }],
  ])
  assert.equal(chosenLogger({}), defaultLogger)
})
