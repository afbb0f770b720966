/*
 * Reading the admin API's responses: a refusal ({code, msg, requestId}) becomes an AdminApiError; a
 * platform that cannot be reached, or that answers something that is not the admin API, an
 * AdminConnectionError. No imports: the console loads it as it is.
 */

/** The platform refused the call: a catalogue code, its message, and the HTTP status it came with. */
export class AdminApiError extends Error {
  constructor(
    readonly code: number,
    readonly msg: string,
    readonly requestId: string | undefined,
    readonly status: number,
  ) {
    super(`error ${code}: ${msg}`)
    this.name = 'AdminApiError'
  }
}

/** The admin API could not be reached, or what answered was not the admin API. */
export class AdminConnectionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'AdminConnectionError'
  }
}

/** A refused response as the error it stands for. */
export async function refusal(baseUrl: string, response: Response): Promise<Error> {
  const text = await response.text().catch(() => '')
  let parsed: { code?: unknown; msg?: unknown; requestId?: unknown } | undefined
  try {
    parsed = JSON.parse(text)
  } catch {}
  if (typeof parsed?.code === 'number' && typeof parsed.msg === 'string') {
    const requestId = typeof parsed.requestId === 'string' ? parsed.requestId : undefined
    return new AdminApiError(parsed.code, parsed.msg, requestId, response.status)
  }
  return new AdminConnectionError(
    `${baseUrl} answered HTTP ${response.status} without an Earshot error body; is it the admin API (EARSHOT_URL)?`,
  )
}

export function unreachable(baseUrl: string, error: unknown): AdminConnectionError {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause
  const code = cause?.code ?? (error as { code?: string }).code
  if (code === 'ECONNREFUSED') {
    return new AdminConnectionError(
      `cannot connect to the admin API at ${baseUrl} (connection refused): is \`earshot serve\` running? ` +
        'Point EARSHOT_URL (or --url) at its admin listener.',
      { cause: error },
    )
  }
  const detail = cause?.message ?? (error as Error).message
  return new AdminConnectionError(`cannot reach the admin API at ${baseUrl}: ${detail}`, { cause: error })
}

/** The non-empty lines of a stream of UTF-8 text, trimmed, as they arrive. */
export async function* textLines(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder()
  let pending = ''
  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true })
    let end = pending.indexOf('\n')
    while (end >= 0) {
      const line = pending.slice(0, end).trim()
      pending = pending.slice(end + 1)
      if (line) yield line
      end = pending.indexOf('\n')
    }
  }
  pending += decoder.decode()
  if (pending.trim()) yield pending.trim()
}

/** A line of a JSON Lines answer (`what` names the answer), as the object it holds. */
export function jsonLine<T>(line: string, what = 'the import response'): T {
  try {
    const value = JSON.parse(line) as T
    if (typeof value === 'object' && value !== null) return value
  } catch {}
  throw new AdminConnectionError(`unexpected line in ${what}: ${line.slice(0, 200)}`)
}
