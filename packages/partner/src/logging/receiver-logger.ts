import type { Logger } from '@earshot/support/logger'

/**
 * Where the receiver and the outbox report what happened, in pino's shape: the details first (ids, codes,
 * an error's message), then the message; a pino logger fits as it is. Details never hold secrets, tokens
 * or decrypted recordings.
 */
export type ReceiverLogger = Pick<Logger, 'info' | 'warn' | 'error'>

/**
 * The kit's first shape, the message first (`console` fitted it). Still accepted as the `logger` option
 * until 0.2; give a ReceiverLogger as `log` instead.
 * @deprecated
 */
export interface MessageFirstLogger {
  info(message: string, details?: Record<string, unknown>): void
  warn(message: string, details?: Record<string, unknown>): void
  error(message: string, details?: Record<string, unknown>): void
}

/** The logging options of the receiver and the outbox. */
export interface LoggerOptions {
  log?: ReceiverLogger | undefined
  /** @deprecated the message-first shape, until 0.2: use `log`. */
  logger?: MessageFirstLogger | undefined
}

const toConsole =
  (write: (...args: unknown[]) => void) =>
  (details: object, message: string): void =>
    Object.keys(details).length === 0 ? write(message) : write(message, details)

/** The default: warnings and errors to stderr, nothing for routine events. */
export const defaultLogger: ReceiverLogger = {
  info: () => {},
  warn: toConsole(console.warn),
  error: toConsole(console.error),
}

export const silentLogger: ReceiverLogger = { info: () => {}, warn: () => {}, error: () => {} }

/** `log`, else `logger` adapted from the message-first shape, else the default. */
export function chosenLogger(options: LoggerOptions): ReceiverLogger {
  if (options.log) return options.log
  const given = options.logger
  if (!given) return defaultLogger
  const adapt =
    (level: keyof MessageFirstLogger) =>
    (details: object, message: string): void =>
      given[level](message, details as Record<string, unknown>)
  return { info: adapt('info'), warn: adapt('warn'), error: adapt('error') }
}
