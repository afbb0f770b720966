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
  const end = text.length
  let at = 0
  const containers: ('{' | '[')[] = []
  const skipWhitespace = () => {
    while (at < end && WHITESPACE.has(text[at] as string)) at++
  }
  const digits = (): boolean => {
    const start = at
    while (at < end && DIGIT.test(text[at] as string)) at++
    return at > start
  }
  /** Scans a string starting at its quote; false with `at` on the offending character. */
  const string = (): boolean => {
    at++
    while (at < end) {
      const char = text[at] as string
      if (char === '"') {
        at++
        return true
      }
      if (char.charCodeAt(0) < 0x20) return false
      if (char === '\\') {
        at++
        if (at >= end) return false
        if (text[at] === 'u') {
          for (let i = 0; i < 4; i++) {
            at++
            if (at >= end || !HEX.test(text[at] as string)) return false
          }
        } else if (!ESCAPES.has(text[at] as string)) {
          return false
        }
      }
      at++
    }
    return false
  }
  const number = (): boolean => {
    if (text[at] === '-') at++
    if (text[at] === '0') at++
    else if (!digits()) return false
    if (text[at] === '.') {
      at++
      if (!digits()) return false
    }
    if (text[at] === 'e' || text[at] === 'E') {
      at++
      if (text[at] === '+' || text[at] === '-') at++
      if (!digits()) return false
    }
    return true
  }
  const literal = (word: string): boolean => {
    for (const char of word) {
      if (text[at] !== char) return false
      at++
    }
    return true
  }
  /** A string, number or literal; false with `at` on the offending character. */
  const scalar = (): boolean => {
    const char = text[at]
    if (char === '"') return string()
    if (char === 't') return literal('true')
    if (char === 'f') return literal('false')
    if (char === 'n') return literal('null')
    if (char === '-' || (char !== undefined && DIGIT.test(char))) return number()
    return false
  }
  /** An object's key and its colon. */
  const key = (): boolean => {
    skipWhitespace()
    if (text[at] !== '"' || !string()) return false
    skipWhitespace()
    if (text[at] !== ':') return false
    at++
    return true
  }

  let expectingValue = true
  for (;;) {
    skipWhitespace()
    const char = text[at]
    if (expectingValue) {
      if (char === '{' || char === '[') {
        at++
        skipWhitespace()
        if (text[at] === (char === '{' ? '}' : ']')) {
          at++
          expectingValue = false
        } else {
          containers.push(char)
          if (char === '{' && !key()) return Math.min(at, end)
        }
      } else if (scalar()) {
        expectingValue = false
      } else {
        return Math.min(at, end)
      }
      continue
    }
    const open = containers.at(-1)
    // The value is complete: what follows it is the error (or nothing, for text that is JSON).
    if (open === undefined) return at
    if (char === ',') {
      at++
      if (open === '{' && !key()) return Math.min(at, end)
      expectingValue = true
    } else if (char === (open === '{' ? '}' : ']')) {
      at++
      containers.pop()
    } else {
      return Math.min(at, end)
    }
  }
}
