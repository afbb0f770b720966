/**
 * Where the receiver and the outbox report what happened. Details never hold secrets, tokens or
 * decrypted recordings: ids, codes and error messages only. `console` fits; so does a small adapter
 * around pino or winston.
 */
export interface ReceiverLogger {
  info(message: string, details?: Record<string, unknown>): void
  warn(message: string, details?: Record<string, unknown>): void
  error(message: string, details?: Record<string, unknown>): void
}

const write =
  (to: (...args: unknown[]) => void) =>
  (message: string, details?: Record<string, unknown>): void =>
    details === undefined ? to(message) : to(message, details)

/** The default: warnings and errors to stderr, nothing for routine events. */
export const defaultLogger: ReceiverLogger = {
  info: () => {},
  warn: write(console.warn),
  error: write(console.error),
}

export const silentLogger: ReceiverLogger = { info: () => {}, warn: () => {}, error: () => {} }
