/**
 * Where, and why, a line of text is not JSON: for refusals that name the line's column. The position is
 * JSON.parse's own when its error gives one; some of its errors (an unexpected character) give none,
 * and then the line is scanned for the first character at which it stops being JSON.
 */
export interface JsonSyntaxProblem {
  /** 1-based, in characters (code points) of the line. */
  column: number
  /** The parser's reason, without the text of the line (V8 quotes it in some messages). */
  reason: string
}

/** Explains JSON.parse's error for `text`, the text it failed on. */
export function jsonSyntaxProblem(text: string, error: unknown): JsonSyntaxProblem {
  const message = error instanceof Error ? error.message : ''
  const positioned = /^(.*?)(?: in JSON)? at position (\d+)/.exec(message)
  const offset = positioned ? Math.min(Number(positioned[2]), text.length) : firstInvalidOffset(text)
  const reason = positioned?.[1] ?? /^(Unexpected token '.+?'),/.exec(message)?.[1] ?? message
  return {
    column: [...text.slice(0, offset)].length + 1,
    reason: offset >= text.length ? 'the JSON ends early' : lowerFirst(reason || 'unexpected character'),
  }
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1)
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r'])
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't'])
const HEX = /^[0-9a-fA-F]$/
const DIGIT = /^[0-9]$/

/**
 * The offset of the first character at which `text` stops being one JSON value (RFC 8259), or
 * text.length when it ends before its value does. Iterative: any depth of nesting is scanned. Called
 * only for text JSON.parse refused.
 */
export function firstInvalidOffset(text: string): number {
  return new JsonScanner(text).firstInvalid()
}

/** Scans JSON text from `at`; each step returns false with `at` on the offending character. */
class JsonScanner {
  at = 0
  readonly #end: number

  constructor(private readonly text: string) {
    this.#end = text.length
  }

  firstInvalid(): number {
    const containers: ('{' | '[')[] = []
    let expectingValue = true
    for (;;) {
      this.skipWhitespace()
      if (expectingValue) {
        const opened = this.value(containers)
        if (opened === undefined) return this.stop()
        expectingValue = opened
        continue
      }
      const open = containers.at(-1)
      // The value is complete: what follows it is the error (or nothing, for text that is JSON).
      if (open === undefined) return this.at
      const char = this.text[this.at]
      if (char === ',') {
        this.at++
        if (open === '{' && !this.key()) return this.stop()
        expectingValue = true
      } else if (char === (open === '{' ? '}' : ']')) {
        this.at++
        containers.pop()
      } else {
        return this.stop()
      }
    }
  }

  /** A value, or the opening of a container: whether a value is still expected; undefined: not JSON. */
  value(containers: ('{' | '[')[]): boolean | undefined {
    const char = this.text[this.at]
    if (char !== '{' && char !== '[') return this.scalar() ? false : undefined
    this.at++
    this.skipWhitespace()
    if (this.text[this.at] === (char === '{' ? '}' : ']')) {
      this.at++
      return false
    }
    containers.push(char)
    if (char === '{' && !this.key()) return undefined
    return true
  }

  stop(): number {
    return Math.min(this.at, this.#end)
  }

  skipWhitespace(): void {
    while (this.at < this.#end && WHITESPACE.has(this.text[this.at] as string)) this.at++
  }

  digits(): boolean {
    const start = this.at
    while (this.at < this.#end && DIGIT.test(this.text[this.at] as string)) this.at++
    return this.at > start
  }

  /** A string starting at its quote. */
  string(): boolean {
    this.at++
    while (this.at < this.#end) {
      const char = this.text[this.at] as string
      if (char === '"') {
        this.at++
        return true
      }
      if (char.charCodeAt(0) < 0x20) return false
      if (char === '\\' && !this.escape()) return false
      this.at++
    }
    return false
  }

  /** The escape after a backslash (`at` on the backslash); `at` left on its last character. */
  escape(): boolean {
    this.at++
    if (this.at >= this.#end) return false
    if (this.text[this.at] !== 'u') return ESCAPES.has(this.text[this.at] as string)
    for (let i = 0; i < 4; i++) {
      this.at++
      if (this.at >= this.#end || !HEX.test(this.text[this.at] as string)) return false
    }
    return true
  }

  number(): boolean {
    const { text } = this
    if (text[this.at] === '-') this.at++
    if (text[this.at] === '0') this.at++
    else if (!this.digits()) return false
    if (text[this.at] === '.') {
      this.at++
      if (!this.digits()) return false
    }
    if (text[this.at] === 'e' || text[this.at] === 'E') {
      this.at++
      if (text[this.at] === '+' || text[this.at] === '-') this.at++
      if (!this.digits()) return false
    }
    return true
  }

  literal(word: string): boolean {
    for (const char of word) {
      if (this.text[this.at] !== char) return false
      this.at++
    }
    return true
  }

  /** A string, number or literal. */
  scalar(): boolean {
    const char = this.text[this.at]
    if (char === '"') return this.string()
    if (char === 't') return this.literal('true')
    if (char === 'f') return this.literal('false')
    if (char === 'n') return this.literal('null')
    if (char === '-' || (char !== undefined && DIGIT.test(char))) return this.number()
    return false
  }

  /** An object's key and its colon. */
  key(): boolean {
    this.skipWhitespace()
    if (this.text[this.at] !== '"' || !this.string()) return false
    this.skipWhitespace()
    if (this.text[this.at] !== ':') return false
    this.at++
    return true
  }
}
