import type { SealedOperationId, SealedPlaintextOf, SealedResultOf } from '@earshot/protocol'
import type { RequestOptions } from './client-types.js'
import type {
  DeliveriesRequest,
  DeliveryPage,
  Endpoint,
  EndpointChanges,
  EndpointList,
  LevelsWindow,
  NewEndpoint,
  PortalLink,
  PortalLinkRequest,
  ReceiverCheckOptions,
  ReceiverCheckReport,
  RemovedEndpoint,
  Replayed,
  ReplaySinceRequest,
  RotatedKey,
  ServiceLevels,
} from './integration-types.js'

/** How long the receiver check may take by default: its pushes, then up to a minute for callbacks. */
const CHECK_TIMEOUT_MS = 180_000

/**
 * The calls with which a partner manages its own integration, as in the portal: its push endpoints, its
 * deliveries with their attempts, replays, the receiver check, its service levels, its key and a link into
 * the portal. Each is one sealed operation of the protocol (call()), its plaintext checked before it is
 * sent and its answer against the contract. EarshotClient has them.
 */
export abstract class IntegrationCalls {
  abstract call<Id extends SealedOperationId>(
    operationId: Id,
    plaintext: SealedPlaintextOf<Id>,
    options?: RequestOptions,
  ): Promise<SealedResultOf<Id>>

  /** Seals later requests, and requests later tokens, with this key. */
  protected abstract useKey(keyVersion: number, secret: string): void

  /** Your push endpoints, with their URL's health. */
  listEndpoints(options: RequestOptions = {}): Promise<EndpointList> {
    return this.call('listEndpoints', {}, options)
  }

  /** Adds a push endpoint (by default for every event type, enabled, without a rate limit). */
  addEndpoint(endpoint: NewEndpoint, options: RequestOptions = {}): Promise<Endpoint> {
    return this.call('addEndpoint', endpoint, options)
  }

  /** Changes an endpoint: its URL, event types, description, rate, or enables or disables it. */
  updateEndpoint(
    endpointId: number,
    changes: EndpointChanges,
    options: RequestOptions = {},
  ): Promise<Endpoint> {
    return this.call('updateEndpoint', { ...changes, endpointId }, options)
  }

  /** Removes an endpoint; its deliveries not yet confirmed are cancelled. */
  removeEndpoint(endpointId: number, options: RequestOptions = {}): Promise<RemovedEndpoint> {
    return this.call('removeEndpoint', { endpointId }, options)
  }

  /**
   * Runs the receiver check against `url`: pushes sealed with your current key, each judged against the
   * protocol, then a wait for your receipt callbacks (`callbackWithinSeconds`, default 60). Its timeout
   * is 3 minutes unless `options.timeoutMs` says otherwise.
   */
  checkReceiver(
    url: string,
    check: ReceiverCheckOptions = {},
    options: RequestOptions = {},
  ): Promise<ReceiverCheckReport> {
    const patient = { ...options, timeoutMs: options.timeoutMs ?? CHECK_TIMEOUT_MS }
    return this.call('checkEndpoint', { ...check, url }, patient)
  }

  /** One page of your deliveries, newest first, each with its attempts. */
  listDeliveries(request: DeliveriesRequest = {}, options: RequestOptions = {}): Promise<DeliveryPage> {
    return this.call('listDeliveries', request, options)
  }

  /** Every page of deliveries from `request.cursor` (the newest without one), until hasMore is false. */
  async *iterateDeliveries(
    request: DeliveriesRequest = {},
    options: RequestOptions = {},
  ): AsyncGenerator<DeliveryPage> {
    let cursor = request.cursor
    for (;;) {
      const page = await this.listDeliveries({ ...request, cursor }, options)
      yield page
      if (!page.hasMore || page.nextCursor === null) return
      cursor = page.nextCursor
    }
  }

  /** Pushes one delivery again (same eventId): a failed, unconfirmed or queued one. */
  replayDelivery(deliveryId: number, options: RequestOptions = {}): Promise<Replayed> {
    return this.call('replayDeliveries', { deliveryId }, options)
  }

  /** Pushes again every delivery created since `since` in one of `states` (default failed and unconfirmed). */
  replaySince(request: ReplaySinceRequest, options: RequestOptions = {}): Promise<Replayed> {
    const { since, states = ['failed', 'unconfirmed'] } = request
    return this.call('replayDeliveries', { states, since }, options)
  }

  /** Your delivery service levels over the last 24 hours (default) or 7 days. */
  levels(window: LevelsWindow = '24h', options: RequestOptions = {}): Promise<ServiceLevels> {
    return this.call('readLevels', { window }, options)
  }

  /**
   * Gives your enterprise a new key and answers it (the secret this once: store it). From then on this
   * client seals its requests, and requests its tokens, with the new key; the old one keeps working for
   * the platform's grace period, so other clients have time to switch.
   */
  async rotateKey(options: RequestOptions = {}): Promise<RotatedKey> {
    const rotated = await this.call('rotateKey', {}, options)
    this.useKey(rotated.keyVersion, rotated.secret)
    return rotated
  }

  /** A one-time link into the portal, `view` (the default) or `manage`, valid for a few minutes. */
  portalLink(request: PortalLinkRequest = {}, options: RequestOptions = {}): Promise<PortalLink> {
    return this.call('mintPortalLink', request, options)
  }
}
