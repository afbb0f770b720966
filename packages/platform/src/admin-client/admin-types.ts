import type { JsonAnswerOf, JsonBodyOf, JsonOf, ParamsOf, QueryOf } from '@earshot/protocol'
import type { AdminContractOf, AdminOperationId } from './admin-contracts.js'

/* The admin API's types, each read from its operation's contract: nothing here is written twice. */

/** A request body: whole, a file (the console sends the one chosen), or a stream of bytes sent as it is read. */
export type RequestBody = string | Uint8Array | Blob | AsyncIterable<Uint8Array>

/** What operation `Id` answers with, as JSON (text, for `metrics`). */
export type AdminAnswer<Id extends AdminOperationId> = JsonAnswerOf<AdminContractOf<Id>>

/** The JSON body operation `Id` takes. */
export type AdminBody<Id extends AdminOperationId> = JsonBodyOf<AdminContractOf<Id>>

/** Path parameters: every one its route's path names, by name and type. */
type ParamsPart<C extends AdminContractOf<AdminOperationId>> =
  ParamsOf<C> extends undefined ? { params?: undefined } : { params: ParamsOf<C> }
type QueryPart<C extends AdminContractOf<AdminOperationId>> =
  QueryOf<C> extends undefined ? { query?: undefined } : { query?: QueryOf<C> }
type BodyPart<C extends AdminContractOf<AdminOperationId>> = C extends { body: { json: infer S } }
  ? object extends JsonOf<S>
    ? { body?: JsonOf<S>; contentType?: undefined }
    : { body: JsonOf<S>; contentType?: undefined }
  : C extends { body: { binary: unknown } | { lines: unknown } }
    ? { body: RequestBody; contentType: string }
    : { body?: undefined; contentType?: undefined }

/** What operation `Id` is called with: its path parameters, query string and body, as its contract has them. */
export type AdminRequest<Id extends AdminOperationId> = ParamsPart<AdminContractOf<Id>> &
  QueryPart<AdminContractOf<Id>> &
  BodyPart<AdminContractOf<Id>>

/** The request argument of a call: optional when the operation needs nothing. */
export type AdminRequestArgs<Id extends AdminOperationId> =
  object extends AdminRequest<Id> ? [request?: AdminRequest<Id>] : [request: AdminRequest<Id>]

/** What any operation is called with, unchecked (the console's untyped calls, a test's raw body). */
export interface LooseRequest {
  params?: Record<string, string | number>
  query?: Record<string, string | number | boolean | undefined>
  /** JSON, unless `contentType` says otherwise (then text, bytes or a stream, sent as it is). */
  body?: unknown
  contentType?: string | undefined
}

type LinesOf<Id extends AdminOperationId> = AdminContractOf<Id>['answer'] extends {
  payload: { lines: infer S }
}
  ? JsonOf<S>
  : never

export type Enterprise = AdminAnswer<'listEnterprises'>['enterprises'][number]
export type EnterpriseCredentials = AdminAnswer<'createEnterprise'>
export type RotatedKey = AdminAnswer<'rotateKey'>
export type EnterpriseChanges = AdminBody<'updateEnterprise'>
export type Delivery = AdminAnswer<'showDelivery'>
export type DeliveryAttempt = Delivery['attempts'][number]
export type DeliveryState = Delivery['state']
export type DeliveryQuery = QueryOf<AdminContractOf<'listDeliveries'>>
export type Endpoint = AdminAnswer<'addEndpoint'>
/** An endpoint with its recent deliveries (newest first) and their attempts. */
export type EndpointDetail = AdminAnswer<'showEndpoint'>
/** A new endpoint: its URL, and what differs from the defaults (every event type, enabled, no rate). */
export type NewEndpoint = AdminBody<'addEndpoint'>
/** The settings of an endpoint to change; maxPerSecond null lifts its rate. */
export type EndpointChanges = AdminBody<'updateEndpoint'>
export type PushUrl = AdminAnswer<'listPushUrls'>['pushUrls'][number]
export type PushUrlState = PushUrl['state']
export type ReceiverCheckReport = AdminAnswer<'checkReceiver'>
export type CheckItem = ReceiverCheckReport['items'][number]
/** What an audio upload stored. */
export type UploadedAudio = AdminAnswer<'uploadAudio'>
/** One line of the import response stream. */
export type ImportLine = LinesOf<'importRecordings'>
/** The filter of an enterprise's recordings, as the partner's query takes it. */
export type RecordingQuery = NonNullable<AdminRequest<'listRecordings'>['query']>
export type RecordingChanges = AdminBody<'updateRecording'>
/** Who a credential stands for (a session, an API key, the break-glass key), with its role's permissions. */
export type Session = AdminAnswer<'session'>
export type Operator = AdminAnswer<'updateOperator'>
/** An operator to add: email, role, and optionally a name and the enterprises they are limited to. */
export type NewOperator = AdminBody<'addOperator'>
/** An operator added: its id and the one-time link where they set a password. */
export type AddedOperator = AdminAnswer<'addOperator'>
/** The fields of an operator to change; enterprises null lifts the limit, enabled false disables. */
export type OperatorChanges = AdminBody<'updateOperator'>
/** An API key as listed: never the key itself. */
export type ApiKey = AdminAnswer<'revokeKey'>
export type NewApiKey = AdminBody<'createKey'>
/** A key just created: the only answer that holds the key. */
export type CreatedApiKey = AdminAnswer<'createKey'>
/** One row of the audit trail. */
export type AuditRow = LinesOf<'exportAudit'>
/** The filter of the audit trail: actor id, enterprise, since a time, before a seq, a page's size. */
export type AuditQuery = NonNullable<AdminRequest<'listAudit'>['query']>
/** The hash chain's verification: ok, the rows checked, and where it breaks. */
export type AuditVerification = AdminAnswer<'verifyAudit'>
