/**
 * A typed client of the admin HTTP API, used by the `earshot` CLI. Global fetch only.
 * A refusal ({code, msg, requestId}) becomes an AdminApiError; a platform that cannot be reached, or
 * that answers something that is not the admin API, becomes an AdminConnectionError.
 */

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8081'
const PREFIX = '/admin/v1'

export type { EnterpriseCredentials }

export interface EnterpriseKey {
  keyVersion: number
  createdAt: string
  /** Null for the current key. */
  retiresAt: string | null
}

export interface Enterprise {
  enterpriseId: number
  name: string
  pushUrl: string | null
  disabled: boolean
  createdAt: string
  keys: EnterpriseKey[]
}

export interface RotatedKey extends EnterpriseCredentials {
  previousKeyVersion: number
  previousKeyRetiresAt: string
}

// The admin API's delivery and import shapes, as the server renders them (types only: nothing of the
// server loads).
import type { ImportProgressLine as ImportLine } from '../imports/json-lines-import.js'
import type { DeliveryView as Delivery } from '../push/delivery-views.js'
import type { EndpointView as Endpoint } from '../push/endpoint-health.js'

export type { DeliveryState } from '../push/delivery-store.js'
export type { AttemptView as DeliveryAttempt, DeliveryView as Delivery } from '../push/delivery-views.js'

import type { EnterpriseCredentials } from '../enterprises/enterprise-store.js'

export type { EndpointState, EndpointView as Endpoint } from '../push/endpoint-health.js'

export interface DeliveryQuery {
  enterpriseId?: number | undefined
  state?: string | undefined
  audioId?: string | undefined
  /** Only deliveries with a smaller id: the cursor for the next page. */
  before?: number | undefined
  limit?: number | undefined
}

/** One line of the import response stream. */
export type { ImportProgressLine as ImportLine } from '../imports/json-lines-import.js'

/** A request body: whole, or a stream of bytes sent as it is read. */
export type RequestBody = string | Uint8Array | AsyncIterable<Uint8Array>

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

export class AdminClient {
  readonly baseUrl: string

  constructor(
    baseUrl: string,
    private readonly adminToken: string,
  ) {
    if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
      throw new AdminConnectionError(
        `the admin API URL must be an absolute http:// or https:// URL; got ${JSON.stringify(baseUrl)}`,
      )
    }
    this.baseUrl = baseUrl.replace(/\/+$/, '')
  }

  createEnterprise(name: string, pushUrl?: string): Promise<EnterpriseCredentials> {
    return this.json('POST', '/enterprises', { name, ...(pushUrl !== undefined && { pushUrl }) })
  }

  async listEnterprises(): Promise<Enterprise[]> {
    const { enterprises } = await this.json<{ enterprises: Enterprise[] }>('GET', '/enterprises')
    return enterprises
  }

  disableEnterprise(enterpriseId: number): Promise<{ enterpriseId: number; disabled: true }> {
    return this.json('POST', `/enterprises/${enterpriseId}/disable`)
  }

  rotateKey(enterpriseId: number): Promise<RotatedKey> {
    return this.json('POST', `/enterprises/${enterpriseId}/rotate-key`)
  }

  setPushUrl(
    enterpriseId: number,
    pushUrl: string | null,
  ): Promise<{ enterpriseId: number; pushUrl: string | null }> {
    return this.json('PUT', `/enterprises/${enterpriseId}/push-url`, { pushUrl })
  }

  updateRecording(
    enterpriseId: number,
    audioId: string,
    changes: Record<string, string | number>,
  ): Promise<{ updated: string }> {
    return this.json(
      'PATCH',
      `/enterprises/${enterpriseId}/recordings/${encodeURIComponent(audioId)}`,
      changes,
    )
  }

  deleteRecording(enterpriseId: number, audioId: string): Promise<{ deleted: string }> {
    return this.json('DELETE', `/enterprises/${enterpriseId}/recordings/${encodeURIComponent(audioId)}`)
  }

  /** Deliveries matching the query, newest first. */
  async listDeliveries(query: DeliveryQuery = {}): Promise<Delivery[]> {
    const params = new URLSearchParams()
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) params.set(name, String(value))
    }
    const search = params.toString()
    const { deliveries } = await this.json<{ deliveries: Delivery[] }>(
      'GET',
      `/deliveries${search && `?${search}`}`,
    )
    return deliveries
  }

  getDelivery(deliveryId: number): Promise<Delivery> {
    return this.json('GET', `/deliveries/${deliveryId}`)
  }

  /** Puts one failed or unconfirmed delivery back to pending. */
  replayDelivery(deliveryId: number): Promise<{ deliveryId: number; replayed: true; delivery: Delivery }> {
    return this.json('POST', `/deliveries/${deliveryId}/replay`)
  }

  /** Puts an enterprise's failed or unconfirmed deliveries created in [from, to) back to pending. */
  replayDeliveries(
    enterpriseId: number,
    from: string,
    to: string,
  ): Promise<{ enterpriseId: number; replayed: number }> {
    return this.json('POST', `/enterprises/${enterpriseId}/deliveries/replay`, { from, to })
  }

  /** How many of an enterprise's deliveries created since `since` an unreceipted replay would push again. */
  countUnreceipted(
    enterpriseId: number,
    since: string,
  ): Promise<{ enterpriseId: number; since: string; replayable: number; alreadyScheduled: number }> {
    return this.json('POST', `/enterprises/${enterpriseId}/deliveries/replay-unreceipted`, {
      since,
      dryRun: true,
    })
  }

  /** Pushes again an enterprise's deliveries created since `since` that were never receipted. */
  replayUnreceipted(
    enterpriseId: number,
    since: string,
  ): Promise<{ enterpriseId: number; since: string; replayed: number; alreadyScheduled: number }> {
    return this.json('POST', `/enterprises/${enterpriseId}/deliveries/replay-unreceipted`, { since })
  }

  /** Every push URL in use or with a health record, with its health. */
  async listEndpoints(): Promise<Endpoint[]> {
    const { endpoints } = await this.json<{ endpoints: Endpoint[] }>('GET', '/endpoints')
    return endpoints
  }

  /** Makes a push URL healthy again; the deliveries it held resume, and those that failed meanwhile. */
  enableEndpoint(
    url: string,
  ): Promise<{ url: string; enabled: true; resumed: number; replayed: number; endpoint: Endpoint }> {
    return this.json('POST', '/endpoints/enable', { url })
  }

  /**
   * Sends a JSON Lines file (a stream is sent as it is read) and yields the lines of the streamed
   * answer as they arrive. The last line is {imported, skipped} (the acknowledgement, written after
   * the last commit) or {error} (the import stopped; the recordings committed before stay). A
   * refusal before the import starts (e.g. a bad line) throws AdminApiError.
   */
  async *importRecordings(enterpriseId: number, jsonLines: RequestBody): AsyncGenerator<ImportLine> {
    const response = await this.send('POST', `/enterprises/${enterpriseId}/recordings/import`, {
      'content-type': 'application/x-ndjson',
      body: jsonLines,
    })
    if (!response.ok) throw await this.refusal(response)
    if (!response.body) throw new AdminConnectionError(`${this.baseUrl} sent an empty import response`)
    const decoder = new TextDecoder()
    let pending = ''
    try {
      for await (const chunk of response.body) {
        pending += decoder.decode(chunk, { stream: true })
        let end = pending.indexOf('\n')
        while (end >= 0) {
          const line = pending.slice(0, end).trim()
          pending = pending.slice(end + 1)
          if (line) yield this.importLine(line)
          end = pending.indexOf('\n')
        }
      }
    } catch (error) {
      if (error instanceof AdminConnectionError) throw error
      throw new AdminConnectionError(
        `the connection to ${this.baseUrl} broke during the import: ${(error as Error).message}`,
        { cause: error },
      )
    }
    pending += decoder.decode()
    if (pending.trim()) yield this.importLine(pending.trim())
  }

  private importLine(line: string): ImportLine {
    try {
      const value = JSON.parse(line) as ImportLine
      if (typeof value === 'object' && value !== null) return value
    } catch {}
    throw new AdminConnectionError(`unexpected line in the import response: ${line.slice(0, 200)}`)
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.send(
      method,
      path,
      body === undefined ? {} : { 'content-type': 'application/json', body: JSON.stringify(body) },
    )
    if (!response.ok) throw await this.refusal(response)
    try {
      return (await response.json()) as T
    } catch (cause) {
      throw new AdminConnectionError(
        `${this.baseUrl} answered ${method} ${path} with a body that is not JSON`,
        {
          cause,
        },
      )
    }
  }

  private async send(
    method: string,
    path: string,
    { body, ...headers }: { 'content-type'?: string; body?: RequestBody },
  ): Promise<Response> {
    const url = `${this.baseUrl}${PREFIX}${path}`
    const streamed = body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)
    try {
      return await fetch(url, {
        method,
        headers: { authorization: `Bearer ${this.adminToken}`, ...headers },
        ...(body !== undefined && { body }),
        ...(streamed && { duplex: 'half' }),
      })
    } catch (error) {
      throw unreachable(this.baseUrl, error)
    }
  }

  private async refusal(response: Response): Promise<Error> {
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
      `${this.baseUrl} answered HTTP ${response.status} without an Earshot error body; is it the admin API (EARSHOT_URL)?`,
    )
  }
}

function unreachable(baseUrl: string, error: unknown): AdminConnectionError {
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
