import type { PlatformOptions } from '@earshot/platform'

/** One pino log line, parsed. */
export interface LogLine {
  level: number
  msg?: string
  [field: string]: unknown
}

/** pino's levels by name. */
export const LogLevel = { debug: 20, info: 30, warn: 40, error: 50 } as const

/** Collects a platform's JSON log lines: pass `destination` to startPlatform as its logDestination. */
export class LogCapture {
  /** Every line written, as written. */
  readonly text: string[] = []
  private waiting: { match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = []

  readonly destination: NonNullable<PlatformOptions['logDestination']> = {
    write: (chunk: string) => {
      for (const text of chunk.split('\n').filter((each) => each.length > 0)) {
        this.text.push(text)
        const line = JSON.parse(text) as LogLine
        this.waiting = this.waiting.filter((waiter) => {
          if (!waiter.match(line)) return true
          waiter.resolve(line)
          return false
        })
      }
    },
  }

  get lines(): LogLine[] {
    return this.text.map((text) => JSON.parse(text) as LogLine)
  }

  /** The first line, written already or yet to come, that matches. */
  waitFor(match: (line: LogLine) => boolean): Promise<LogLine> {
    const written = this.lines.find(match)
    if (written) return Promise.resolve(written)
    return new Promise((resolve) => this.waiting.push({ match, resolve }))
  }
}
