import type { Static } from 'typebox'
import type {
  EnterpriseChanges,
  EnterpriseCredentials,
  EnterpriseSummary,
  RotatedKey,
} from '../enterprises/enterprise-store.js'
import type { ImportProgressLine } from '../imports/json-lines-import.js'
import type { DeliveryView } from '../push/delivery-views.js'
import type { EndpointChangesSchema, NewEndpointSchema } from '../push/endpoint-input.js'
import type { EndpointView } from '../push/endpoint-store.js'
import type { PushUrlView } from '../push/push-url-health.js'
import type { ReceiverCheckReport } from '../push/receiver-check.js'
import { type AdminOperationId, adminOperations } from './admin-operations.js'

/**
 * The typed client of the admin HTTP API: the `earshot` CLI's, the tests', and the console's (which loads
 * the compiled module as it is: global fetch only, and nothing imported at run time but the operations).
 * Operations are called by their operationId. A refusal ({code, msg, requestId}) becomes an AdminApiError;
 * a platform that cannot be reached, or that answers something that is not the admin API, becomes an
 * AdminConnectionError.
 */

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8081'

export type { DeliveryState } from '../push/delivery-store.js'
export type { AttemptView as DeliveryAttempt, DeliveryView as Delivery } from '../push/delivery-views.js'
export type { EndpointView as Endpoint } from '../push/endpoint-store.js'
export type { PushUrlState, PushUrlView as PushUrl } from '../push/push-url-health.js'
export type { CheckItem, ReceiverCheckReport } from '../push/receiver-check.js'
export type { EnterpriseChanges, EnterpriseCredentials, RotatedKey }
export type Enterprise = EnterpriseSummary
/** What an audio upload stored. */
export interface UploadedAudio {
  audioId: string
  bytes: number
  sha256: string
  contentType: string
}
/** A new endpoint: its URL, and what differs from the defaults (every event type, enabled, no rate). */
export type NewEndpoint = Static<typeof NewEndpointSchema>
/** The settings of an endpoint to change; maxPerSecond null lifts its rate. */
export type EndpointChanges = Static<typeof EndpointChangesSchema>
/** An endpoint with its recent deliveries (newest first) and their attempts. */
export interface EndpointDetail {
  endpoint: EndpointView
  recentDeliveries: DeliveryView[]
}
/** One line of the import response stream. */
export type ImportLine = ImportProgressLine

export interface DeliveryQuery {
  enterpriseId?: number | undefined
  state?: string | undefined
  audioId?: string | undefined
  /** Only deliveries with a smaller id: the cursor for the next page. */
  before?: number | undefined
  limit?: number | undefined
}

/** A request body: whole, or a stream of bytes sent as it is read. */
export type RequestBody = string | Uint8Array | AsyncIterable<Uint8Array>

/** What an operation is called with: its path parameters, query string and body. */
export interface OperationRequest {
  params?: Record<string, string | number>
  query?: Record<string, string | number | boolean | undefined>
  /** JSON, unless `contentType` says otherwise (then text, bytes or a stream, sent as it is). */
  body?: unknown
  contentType?: string
}

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

  /** Calls an operation and resolves with its JSON answer (the metrics' text for `metrics`). */
  async call<T>(operationId: AdminOperationId, request: OperationRequest = {}): Promise<T> {
    return this.answer<T>(operationId, await this.send(operationId, request))
  }

  /** An operation's response as call() resolves it: its JSON answer, or the refusal thrown. */
  async answer<T>(operationId: AdminOperationId, response: Response): Promise<T> {
    if (!response.ok) throw await this.refusal(response)
    if (operationId === 'metrics') return (await response.text()) as T
    try {
      return (await response.json()) as T
    } catch (cause) {
      throw new AdminConnectionError(`${this.baseUrl} answered ${operationId} with a body that is not JSON`, {
        cause,
      })
    }
  }

  /** The URL, method and headers of an operation's request, for a caller sending its body itself. */
  prepare(
    operationId: AdminOperationId,
    request: OperationRequest,
  ): { url: string; method: string; headers: Record<string, string> } {
    const { method, path } = adminOperations[operationId]
    const url = `${this.baseUrl}${fill(path, request.params)}${search(request.query)}`
    const headers: Record<string, string> = { authorization: `Bearer ${this.adminToken}` }
    if (request.body !== undefined) headers['content-type'] = request.contentType ?? 'application/json'
    return { url, method, headers }
  }

  /** Calls an operation and hands over the response as it is, to be read as it streams. */
  async send(operationId: AdminOperationId, request: OperationRequest): Promise<Response> {
    const { url, method, headers } = this.prepare(operationId, request)
    const { body, contentType = 'application/json' } = request
    const sent = body === undefined || contentType !== 'application/json' ? body : JSON.stringify(body)
    const streamed = sent !== undefined && typeof sent !== 'string' && !(sent instanceof Uint8Array)
    try {
      return await fetch(url, {
        method,
        headers,
        ...(sent !== undefined && { body: sent as RequestInit['body'] }),
        ...(streamed && { duplex: 'half' }),
      })
    } catch (error) {
      throw unreachable(this.baseUrl, error)
    }
  }

  createEnterprise(name: string, pushUrl?: string): Promise<EnterpriseCredentials> {
    return this.call('createEnterprise', { body: { name, ...(pushUrl !== undefined && { pushUrl }) } })
  }

  async listEnterprises(): Promise<Enterprise[]> {
    return (await this.call<{ enterprises: Enterprise[] }>('listEnterprises')).enterprises
  }

  /** Changes an enterprise's settings (the fields given); answers the enterprise as it is now. */
  updateEnterprise(enterpriseId: number, changes: EnterpriseChanges): Promise<Enterprise> {
    return this.call('updateEnterprise', { params: { enterpriseId }, body: changes })
  }

  disableEnterprise(enterpriseId: number): Promise<{ enterpriseId: number; disabled: true }> {
    return this.call('disableEnterprise', { params: { enterpriseId } })
  }

  rotateKey(enterpriseId: number): Promise<RotatedKey> {
    return this.call('rotateKey', { params: { enterpriseId } })
  }

  setPushUrl(
    enterpriseId: number,
    pushUrl: string | null,
  ): Promise<{ enterpriseId: number; pushUrl: string | null; cancelled: number }> {
    return this.call('setPushUrl', { params: { enterpriseId }, body: { pushUrl } })
  }

  updateRecording(
    enterpriseId: number,
    audioId: string,
    changes: Record<string, string | number>,
  ): Promise<{ updated: string }> {
    return this.call('updateRecording', { params: { enterpriseId, audioId }, body: changes })
  }

  deleteRecording(enterpriseId: number, audioId: string): Promise<{ deleted: string }> {
    return this.call('deleteRecording', { params: { enterpriseId, audioId } })
  }

  /** Deliveries matching the query, newest first. */
  async listDeliveries(query: DeliveryQuery = {}): Promise<DeliveryView[]> {
    return (await this.call<{ deliveries: DeliveryView[] }>('listDeliveries', { query: { ...query } }))
      .deliveries
  }

  getDelivery(deliveryId: number): Promise<DeliveryView> {
    return this.call('showDelivery', { params: { deliveryId } })
  }

  /** Puts one failed, unconfirmed or queued delivery back to pending. */
  replayDelivery(
    deliveryId: number,
  ): Promise<{ deliveryId: number; replayed: true; delivery: DeliveryView }> {
    return this.call('replayDelivery', { params: { deliveryId } })
  }

  /** Cancels one delivery not yet confirmed. */
  cancelDelivery(
    deliveryId: number,
  ): Promise<{ deliveryId: number; cancelled: true; delivery: DeliveryView }> {
    return this.call('cancelDelivery', { params: { deliveryId } })
  }

  /** Puts an enterprise's failed or unconfirmed deliveries created in [from, to) back to pending. */
  replayDeliveries(
    enterpriseId: number,
    from: string,
    to: string,
  ): Promise<{ enterpriseId: number; replayed: number }> {
    return this.call('replayRange', { params: { enterpriseId }, body: { from, to } })
  }

  /** How many of an enterprise's deliveries created since `since` an unreceipted replay would push again. */
  countUnreceipted(
    enterpriseId: number,
    since: string,
  ): Promise<{ enterpriseId: number; since: string; replayable: number; alreadyScheduled: number }> {
    return this.call('replayUnreceipted', { params: { enterpriseId }, body: { since, dryRun: true } })
  }

  /** Pushes again an enterprise's deliveries created since `since` that were never receipted. */
  replayUnreceipted(
    enterpriseId: number,
    since: string,
  ): Promise<{ enterpriseId: number; since: string; replayed: number; alreadyScheduled: number }> {
    return this.call('replayUnreceipted', { params: { enterpriseId }, body: { since } })
  }

  /** Every enterprise's push endpoints, by enterprise, with their URL's health. */
  async listEndpoints(): Promise<EndpointView[]> {
    return (await this.call<{ endpoints: EndpointView[] }>('listEndpoints')).endpoints
  }

  /** An enterprise's push endpoints, in the order they were added. */
  async listEnterpriseEndpoints(enterpriseId: number): Promise<EndpointView[]> {
    const params = { enterpriseId }
    return (await this.call<{ endpoints: EndpointView[] }>('listEnterpriseEndpoints', { params })).endpoints
  }

  /** Adds a push endpoint to an enterprise (it may have 10 at most). */
  addEndpoint(enterpriseId: number, endpoint: NewEndpoint): Promise<EndpointView> {
    return this.call('addEndpoint', { params: { enterpriseId }, body: endpoint })
  }

  showEndpoint(enterpriseId: number, endpointId: number): Promise<EndpointDetail> {
    return this.call('showEndpoint', { params: { enterpriseId, endpointId } })
  }

  /** Changes an endpoint's settings; those not given stay as they are. */
  updateEndpoint(
    enterpriseId: number,
    endpointId: number,
    changes: EndpointChanges,
  ): Promise<EndpointView & { discarded: number }> {
    return this.call('updateEndpoint', { params: { enterpriseId, endpointId }, body: changes })
  }

  /** Removes an endpoint; its deliveries not yet confirmed are cancelled. */
  removeEndpoint(enterpriseId: number, endpointId: number): Promise<{ removed: number; cancelled: number }> {
    return this.call('removeEndpoint', { params: { enterpriseId, endpointId } })
  }

  /** The receiver check against a URL (answers once each callback came, or callbackWithinSeconds passed). */
  checkReceiver(
    enterpriseId: number,
    url: string,
    callbackWithinSeconds?: number,
  ): Promise<ReceiverCheckReport> {
    const body = { url, ...(callbackWithinSeconds !== undefined && { callbackWithinSeconds }) }
    return this.call('checkReceiver', { params: { enterpriseId }, body })
  }

  /** Every push URL in use or with a health record, with its health. */
  async listPushUrls(): Promise<PushUrlView[]> {
    return (await this.call<{ pushUrls: PushUrlView[] }>('listPushUrls')).pushUrls
  }

  /** Makes a push URL healthy again; the deliveries it held resume, and those that failed meanwhile. */
  enablePushUrl(
    url: string,
  ): Promise<{ url: string; enabled: true; resumed: number; replayed: number; endpoint: PushUrlView }> {
    return this.call('enablePushUrl', { body: { url } })
  }

  /** An enterprise's recordings as its partner's query answers them (stored audio as fresh links). */
  listRecordings(
    enterpriseId: number,
    filter: {
      audioId?: string
      deviceUid?: string
      startTime?: string
      endTime?: string
      page?: number
      size?: number
    } = {},
  ): Promise<{ total: number; items: { audioId: string; data: Record<string, unknown> }[] }> {
    return this.call('listRecordings', { params: { enterpriseId }, query: filter })
  }

  /** Signs media links with a new key; with retireOthers, links signed before stop working. */
  rotateLinkKey(retireOthers = false): Promise<{ keyId: number; retiredOthers: boolean }> {
    return this.call('rotateLinkKey', { body: { retireOthers } })
  }

  /**
   * Uploads a recording's audio (a stream is sent as it is read): Earshot stores it and partners get
   * signed links to it. `contentType` is the audio's, e.g. audio/wav.
   */
  uploadAudio(
    enterpriseId: number,
    audioId: string,
    audio: RequestBody,
    options: { contentType: string; recordDuration?: number | undefined },
  ): Promise<UploadedAudio> {
    return this.call('uploadAudio', {
      params: { enterpriseId, audioId },
      query: { recordDuration: options.recordDuration },
      body: audio,
      contentType: options.contentType,
    })
  }

  /**
   * Sends a JSON Lines file (a stream is sent as it is read) and yields the lines of the streamed
   * answer as they arrive. The last line is {imported, skipped} (the acknowledgement, written after
   * the last commit) or {error} (the import stopped; the recordings committed before stay). A
   * refusal before the import starts (e.g. a bad line) throws AdminApiError.
   */
  async *importRecordings(enterpriseId: number, jsonLines: RequestBody): AsyncGenerator<ImportLine> {
    const response = await this.send('importRecordings', {
      params: { enterpriseId },
      body: jsonLines,
      contentType: 'application/x-ndjson',
    })
    if (!response.ok) throw await this.refusal(response)
    if (!response.body) throw new AdminConnectionError(`${this.baseUrl} sent an empty import response`)
    try {
      for await (const line of textLines(response.body)) yield importLine(line)
    } catch (error) {
      if (error instanceof AdminConnectionError) throw error
      throw new AdminConnectionError(
        `the connection to ${this.baseUrl} broke during the import: ${(error as Error).message}`,
        { cause: error },
      )
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

/** The path with each `:name` replaced by its parameter. */
function fill(path: string, params: OperationRequest['params'] = {}): string {
  return path.replace(/:(\w+)/g, (_, name: string) => {
    if (params[name] === undefined) throw new TypeError(`${path} needs the parameter ${name}`)
    return encodeURIComponent(String(params[name]))
  })
}

function search(query: OperationRequest['query'] = {}): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value))
  const text = params.toString()
  return text && `?${text}`
}

/** The non-empty lines of a stream of UTF-8 text, trimmed, as they arrive. */
async function* textLines(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
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

function importLine(line: string): ImportLine {
  try {
    const value = JSON.parse(line) as ImportLine
    if (typeof value === 'object' && value !== null) return value
  } catch {}
  throw new AdminConnectionError(`unexpected line in the import response: ${line.slice(0, 200)}`)
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
