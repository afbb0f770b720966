import type { JsonObject } from '@earshot/protocol'
import type { RequestOptions } from './client-types.js'
import type {
  DeliveriesRequest,
  DeliveryPage,
  Endpoint,
  EndpointChanges,
  EndpointList,
  LevelsWindow,
  NewEndpoint,
  PortalAccess,
  PortalLink,
  ReceiverCheckReport,
  RemovedEndpoint,
  Replayed,
  ReplaySinceRequest,
  RotatedKey,
  ServiceLevels,
} from './integration-types.js'
import { withoutUndefined } from './options-check.js'

/** How long the receiver check may take by default: its pushes, then up to a minute for callbacks. */
const CHECK_TIMEOUT_MS = 180_000

/**
 * The calls with which a partner manages its own integration, as in the portal: its push endpoints, its
 * deliveries with their attempts, replays, the receiver check, its service levels, its key and a link into
 * the portal. Each is one sealed request with a token, retried like every call. EarshotClient has them.
 */
export abstract class IntegrationCalls {
  /** Sends one sealed request and answers its opened data. */
  protected abstract sealedCall(
    path: string,
    plaintext: JsonObject,
    options: RequestOptions,
  ): Promise<unknown>

  /** Seals later requests, and requests later tokens, with this key. */
  protected abstract useKey(keyVersion: number, secret: string): void

  /** Your push endpoints, with their URL's health. */
  listEndpoints(options: RequestOptions = {}): Promise<EndpointList> {
    return this.#send('/openapi/v1/endpoints/list', {}, options) as Promise<EndpointList>
  }

  /** Adds a push endpoint (by default for every event type, enabled, without a rate limit). */
  addEndpoint(endpoint: NewEndpoint, options: RequestOptions = {}): Promise<Endpoint> {
    return this.#send('/openapi/v1/endpoints/add', { ...endpoint }, options) as Promise<Endpoint>
  }

  /** Changes an endpoint: its URL, event types, description, rate, or enables or disables it. */
  updateEndpoint(endpointId: number, changes: EndpointChanges, options: RequestOptions = {}) {
    return this.#send(
      '/openapi/v1/endpoints/update',
      { ...changes, endpointId },
      options,
    ) as Promise<Endpoint>
  }

  /** Removes an endpoint; its deliveries not yet confirmed are cancelled. */
  removeEndpoint(endpointId: number, options: RequestOptions = {}): Promise<RemovedEndpoint> {
    return this.#send('/openapi/v1/endpoints/remove', { endpointId }, options) as Promise<RemovedEndpoint>
  }

  /**
   * Runs the receiver check against `url`: pushes sealed with your current key, each judged against the
   * protocol. It takes up to a few minutes: its timeout is 3 minutes unless `options.timeoutMs` says.
   */
  checkReceiver(url: string, options: RequestOptions = {}): Promise<ReceiverCheckReport> {
    const patient = { ...options, timeoutMs: options.timeoutMs ?? CHECK_TIMEOUT_MS }
    return this.#send('/openapi/v1/endpoints/check', { url }, patient) as Promise<ReceiverCheckReport>
  }

  /** One page of your deliveries, newest first, each with its attempts. */
  listDeliveries(request: DeliveriesRequest = {}, options: RequestOptions = {}): Promise<DeliveryPage> {
    return this.#send('/openapi/v1/deliveries/list', { ...request }, options) as Promise<DeliveryPage>
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

  /** Pushes one delivery again (same eventId). */
  replayDelivery(deliveryId: number, options: RequestOptions = {}): Promise<Replayed> {
    return this.#send('/openapi/v1/deliveries/replay', { deliveryId }, options) as Promise<Replayed>
  }

  /** Pushes again every delivery created since `since` in one of `states` (default failed and unconfirmed). */
  replaySince(request: ReplaySinceRequest, options: RequestOptions = {}): Promise<Replayed> {
    const { since, states = ['failed', 'unconfirmed'] } = request
    return this.#send('/openapi/v1/deliveries/replay', { states, since }, options) as Promise<Replayed>
  }

  /** Your delivery service levels over the last 24 hours (default) or 7 days. */
  levels(window: LevelsWindow = '24h', options: RequestOptions = {}): Promise<ServiceLevels> {
    return this.#send('/openapi/v1/levels', { window }, options) as Promise<ServiceLevels>
  }

  /**
   * Gives your enterprise a new key and answers it (the secret this once: store it). From then on this
   * client seals its requests, and requests its tokens, with the new key; the old one keeps working for
   * the platform's grace period, so other clients have time to switch.
   */
  async rotateKey(options: RequestOptions = {}): Promise<RotatedKey> {
    const rotated = (await this.#send('/openapi/v1/key/rotate', {}, options)) as RotatedKey
    this.useKey(rotated.keyVersion, rotated.secret)
    return rotated
  }

  /** A one-time link into the portal (default access: manage), valid for a few minutes. */
  portalLink(request: { access?: PortalAccess } = {}, options: RequestOptions = {}): Promise<PortalLink> {
    return this.#send('/openapi/v1/portal/link', { ...request }, options) as Promise<PortalLink>
  }

  #send(path: string, plaintext: object, options: RequestOptions): Promise<unknown> {
    return this.sealedCall(path, withoutUndefined(plaintext) as JsonObject, options)
  }
}
