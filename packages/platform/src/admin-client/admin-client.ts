import type { AdminOperationId } from './admin-contracts.js'
import { adminOperations } from './admin-operations.js'
import { AdminConnectionError, jsonLine, refusal, textLines, unreachable } from './admin-responses.js'
import type {
  AddedOperator,
  AdminAnswer,
  AdminRequest,
  AdminRequestArgs,
  ApiKey,
  AuditQuery,
  AuditRow,
  AuditVerification,
  CreatedApiKey,
  Delivery,
  DeliveryQuery,
  Endpoint,
  EndpointChanges,
  EndpointDetail,
  Enterprise,
  EnterpriseChanges,
  EnterpriseCredentials,
  ImportLine,
  LooseRequest,
  NewApiKey,
  NewEndpoint,
  NewOperator,
  Operator,
  OperatorChanges,
  PushUrl,
  ReceiverCheckReport,
  RecordingChanges,
  RecordingQuery,
  RequestBody,
  RotatedKey,
  Session,
  UploadedAudio,
} from './admin-types.js'

/**
 * The typed client of the admin HTTP API: the `earshot` CLI's, the tests', and the console's (which loads
 * the compiled module as it is: global fetch only, and nothing imported at run time but the operations'
 * table and admin-responses.js). Operations are called by their operationId, typed by their contracts.
 * Each request carries the credential given as its bearer token: an API key (`esk_…`) or the break-glass
 * EARSHOT_ADMIN_TOKEN; the console, signed in with a session cookie, gives none.
 */

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:8081'

export { AdminApiError, AdminConnectionError, unreachable } from './admin-responses.js'
export type * from './admin-types.js'
export type { AdminOperationId }

export class AdminClient {
  readonly baseUrl: string

  /** `credential`: an API key or the break-glass key, sent as `Authorization: Bearer`; '' sends none. */
  constructor(
    baseUrl: string,
    private readonly credential: string,
  ) {
    if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
      throw new AdminConnectionError(
        `the admin API URL must be an absolute http:// or https:// URL; got ${JSON.stringify(baseUrl)}`,
      )
    }
    this.baseUrl = baseUrl.replace(/\/+$/, '')
  }

  /** Calls an operation and resolves with its answer (the metrics' text for `metrics`). */
  async call<Id extends AdminOperationId>(
    operationId: Id,
    ...[request]: AdminRequestArgs<Id>
  ): Promise<AdminAnswer<Id>> {
    return this.answer(operationId, await this.send(operationId, ...([request] as AdminRequestArgs<Id>)))
  }

  /** An operation's response as call() resolves it: its answer, or the refusal thrown. */
  async answer<Id extends AdminOperationId>(operationId: Id, response: Response): Promise<AdminAnswer<Id>> {
    if (!response.ok) throw await refusal(this.baseUrl, response)
    if (adminOperations[operationId].answer === 'text')
      return (await response.text()) as unknown as AdminAnswer<Id>
    try {
      return (await response.json()) as AdminAnswer<Id>
    } catch (cause) {
      throw new AdminConnectionError(`${this.baseUrl} answered ${operationId} with a body that is not JSON`, {
        cause,
      })
    }
  }

  /** The URL, method and headers of an operation's request, for a caller sending its body itself. */
  prepare<Id extends AdminOperationId>(
    operationId: Id,
    ...[request]: AdminRequestArgs<Id>
  ): { url: string; method: string; headers: Record<string, string> } {
    const given = (request ?? {}) as LooseRequest
    const { method, path } = adminOperations[operationId]
    const url = `${this.baseUrl}${fill(path, given.params)}${search(given.query)}`
    const headers: Record<string, string> = this.credential
      ? { authorization: `Bearer ${this.credential}` }
      : {}
    if (given.body !== undefined) headers['content-type'] = given.contentType ?? 'application/json'
    return { url, method, headers }
  }

  /** Calls an operation and hands over the response as it is, to be read as it streams. */
  async send<Id extends AdminOperationId>(operationId: Id, ...args: AdminRequestArgs<Id>): Promise<Response> {
    const { url, method, headers } = this.prepare(operationId, ...args)
    const { body, contentType = 'application/json' } = (args[0] ?? {}) as LooseRequest
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
    return (await this.call('listEnterprises')).enterprises
  }

  /** Changes an enterprise's settings (the fields given); answers the enterprise as it is now. */
  updateEnterprise(enterpriseId: number, changes: EnterpriseChanges): Promise<Enterprise> {
    return this.call('updateEnterprise', { params: { enterpriseId }, body: changes })
  }

  disableEnterprise(enterpriseId: number): Promise<AdminAnswer<'disableEnterprise'>> {
    return this.call('disableEnterprise', { params: { enterpriseId } })
  }

  rotateKey(enterpriseId: number): Promise<RotatedKey> {
    return this.call('rotateKey', { params: { enterpriseId } })
  }

  setPushUrl(enterpriseId: number, pushUrl: string | null): Promise<AdminAnswer<'setPushUrl'>> {
    return this.call('setPushUrl', { params: { enterpriseId }, body: { pushUrl } })
  }

  updateRecording(
    enterpriseId: number,
    audioId: string,
    changes: RecordingChanges,
  ): Promise<AdminAnswer<'updateRecording'>> {
    return this.call('updateRecording', { params: { enterpriseId, audioId }, body: changes })
  }

  deleteRecording(enterpriseId: number, audioId: string): Promise<AdminAnswer<'deleteRecording'>> {
    return this.call('deleteRecording', { params: { enterpriseId, audioId } })
  }

  /** Deliveries matching the query, newest first. */
  async listDeliveries(query: DeliveryQuery = {}): Promise<Delivery[]> {
    return (await this.call('listDeliveries', { query })).deliveries
  }

  getDelivery(deliveryId: number): Promise<Delivery> {
    return this.call('showDelivery', { params: { deliveryId } })
  }

  /** Puts one failed, unconfirmed or queued delivery back to pending. */
  replayDelivery(deliveryId: number): Promise<AdminAnswer<'replayDelivery'>> {
    return this.call('replayDelivery', { params: { deliveryId } })
  }

  /** Cancels one delivery not yet confirmed. */
  cancelDelivery(deliveryId: number): Promise<AdminAnswer<'cancelDelivery'>> {
    return this.call('cancelDelivery', { params: { deliveryId } })
  }

  /** Puts an enterprise's failed or unconfirmed deliveries created in [from, to) back to pending. */
  replayDeliveries(enterpriseId: number, from: string, to: string): Promise<AdminAnswer<'replayRange'>> {
    return this.call('replayRange', { params: { enterpriseId }, body: { from, to } })
  }

  /** How many of an enterprise's deliveries created since `since` an unreceipted replay would push again. */
  async countUnreceipted(
    enterpriseId: number,
    since: string,
  ): Promise<{ enterpriseId: number; since: string; replayable: number; alreadyScheduled: number }> {
    const body = { since, dryRun: true }
    const counted = await this.call('replayUnreceipted', { params: { enterpriseId }, body })
    return counted as typeof counted & { replayable: number }
  }

  /** Pushes again an enterprise's deliveries created since `since` that were never receipted. */
  async replayUnreceipted(
    enterpriseId: number,
    since: string,
  ): Promise<{ enterpriseId: number; since: string; replayed: number; alreadyScheduled: number }> {
    const replayed = await this.call('replayUnreceipted', { params: { enterpriseId }, body: { since } })
    return replayed as typeof replayed & { replayed: number }
  }

  /** Every enterprise's push endpoints, by enterprise, with their URL's health. */
  async listEndpoints(): Promise<Endpoint[]> {
    return (await this.call('listEndpoints')).endpoints
  }

  /** An enterprise's push endpoints, in the order they were added. */
  async listEnterpriseEndpoints(enterpriseId: number): Promise<Endpoint[]> {
    return (await this.call('listEnterpriseEndpoints', { params: { enterpriseId } })).endpoints
  }

  /** Adds a push endpoint to an enterprise (it may have 10 at most). */
  addEndpoint(enterpriseId: number, endpoint: NewEndpoint): Promise<Endpoint> {
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
  ): Promise<AdminAnswer<'updateEndpoint'>> {
    return this.call('updateEndpoint', { params: { enterpriseId, endpointId }, body: changes })
  }

  /** Removes an endpoint; its deliveries not yet confirmed are cancelled. */
  removeEndpoint(enterpriseId: number, endpointId: number): Promise<AdminAnswer<'removeEndpoint'>> {
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
  async listPushUrls(): Promise<PushUrl[]> {
    return (await this.call('listPushUrls')).pushUrls
  }

  /** Makes a push URL healthy again; the deliveries it held resume, and those that failed meanwhile. */
  enablePushUrl(url: string): Promise<AdminAnswer<'enablePushUrl'>> {
    return this.call('enablePushUrl', { body: { url } })
  }

  /** An enterprise's recordings as its partner's query answers them (stored audio as fresh links). */
  listRecordings(enterpriseId: number, filter: RecordingQuery = {}): Promise<AdminAnswer<'listRecordings'>> {
    return this.call('listRecordings', { params: { enterpriseId }, query: filter })
  }

  /** Signs media links with a new key; with retireOthers, links signed before stop working. */
  rotateLinkKey(retireOthers = false): Promise<AdminAnswer<'rotateLinkKey'>> {
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
    const request: AdminRequest<'importRecordings'> = {
      params: { enterpriseId },
      body: jsonLines,
      contentType: 'application/x-ndjson',
    }
    yield* this.lines<ImportLine>(await this.send('importRecordings', request), 'import')
  }

  /** Who the credential stands for: its actor, role, enterprises and permissions. */
  session(): Promise<Session> {
    return this.call('session')
  }

  async listOperators(): Promise<Operator[]> {
    return (await this.call('listOperators')).operators
  }

  /** Adds an operator; the answer holds the one-time link where they set their password. */
  addOperator(operator: NewOperator): Promise<AddedOperator> {
    return this.call('addOperator', { body: operator })
  }

  /** Changes an operator's name, role, enterprises or enabled; disabling ends their sessions. */
  updateOperator(operatorId: number, changes: OperatorChanges): Promise<Operator> {
    return this.call('updateOperator', { params: { operatorId }, body: changes })
  }

  /** Ends every session of an operator's, on every instance. */
  endOperatorSessions(operatorId: number): Promise<AdminAnswer<'endOperatorSessions'>> {
    return this.call('endOperatorSessions', { params: { operatorId } })
  }

  /** API keys with when each was last used (never the keys themselves). */
  async listKeys(): Promise<ApiKey[]> {
    return (await this.call('listKeys')).keys
  }

  /** Creates an API key: the answer is the only time the key is shown. */
  createKey(key: NewApiKey): Promise<CreatedApiKey> {
    return this.call('createKey', { body: key })
  }

  /** Revokes an API key: refused from its next request on. */
  revokeKey(keyId: number): Promise<ApiKey> {
    return this.call('revokeKey', { params: { keyId } })
  }

  /** A page of the audit trail, newest first, filtered. */
  async listAudit(query: AuditQuery = {}): Promise<AuditRow[]> {
    return (await this.call('listAudit', { query })).rows
  }

  /** Checks the audit trail's hash chain: ok, or the seq where it breaks. */
  verifyAudit(): Promise<AuditVerification> {
    return this.call('verifyAudit')
  }

  /** Every row of the audit trail, oldest first, as it streams. */
  async *exportAudit(): AsyncGenerator<AuditRow> {
    yield* this.lines<AuditRow>(await this.send('exportAudit'), 'audit export')
  }

  /** A JSON Lines answer's objects as they arrive; a refusal throws AdminApiError. */
  private async *lines<T>(response: Response, what: string): AsyncGenerator<T> {
    if (!response.ok) throw await refusal(this.baseUrl, response)
    if (!response.body) throw new AdminConnectionError(`${this.baseUrl} sent an empty ${what} response`)
    try {
      for await (const line of textLines(response.body)) yield jsonLine<T>(line, `the ${what} response`)
    } catch (error) {
      if (error instanceof AdminConnectionError) throw error
      throw new AdminConnectionError(
        `the connection to ${this.baseUrl} broke during the ${what}: ${(error as Error).message}`,
        { cause: error },
      )
    }
  }
}

/** The path with each `:name` replaced by its parameter. */
function fill(path: string, params: LooseRequest['params'] = {}): string {
  return path.replace(/:(\w+)/g, (_, name: string) => {
    if (params[name] === undefined) throw new TypeError(`${path} needs the parameter ${name}`)
    return encodeURIComponent(String(params[name]))
  })
}

function search(query: LooseRequest['query'] = {}): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value))
  const text = params.toString()
  return text && `?${text}`
}
