/** Bytes start..end of a file, both included. */
export interface ByteRange {
  start: number
  end: number
}

/**
 * The one range a `Range` header asks of a file of `size` bytes (RFC 9110 §14.1.2): undefined when there is
 * no header, or one this server ignores (not bytes, several ranges, malformed), so the whole file goes;
 * 'unsatisfiable' when it starts past the end, and any range of an empty file (it has no byte to send).
 */
export function rangeOf(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  const match = header === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (!match) return undefined
  const [, first, last] = match as unknown as [string, string, string]
  if (first === '' && last === '') return undefined
  if (size === 0) return 'unsatisfiable'
  if (first === '') {
    // A suffix: the last N bytes.
    const suffix = Number(last)
    if (suffix === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  const end = last === '' ? size - 1 : Number(last)
  if (last !== '' && end < start) return undefined
  if (start >= size) return 'unsatisfiable'
  return { start, end: Math.min(end, size - 1) }
}
