/**
 * How the platform's parts and the queue report: pino's shape, details first (ids, counts, an `err`),
 * then the message. A pino logger fits as it is; each part asks only for the levels it uses
 * (`Pick<Logger, 'warn' | 'error'>`).
 */
export interface Logger {
  debug(details: object, message: string): void
  info(details: object, message: string): void
  warn(details: object, message: string): void
  error(details: object, message: string): void
}
