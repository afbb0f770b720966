import type { AccessTokens } from '../auth/access-tokens.js'
import type { CredentialCache } from '../auth/credential-cache.js'
import type { NonceGuard } from '../auth/replay-guard.js'
import type { PlatformConfig } from '../config/config.js'
import type { FirstEndpoint } from '../enterprises/enterprise-store.js'
/**
 * What a running platform hands its features: passed in, never global. The features that it is built from
 * (auth, config, media, metrics, recordings, storage, http) never import it: each names the part it needs.
 */ import type { ErasureSigningKey } from '../erasures/erasure-signing-key.js'
import type { LogDestination } from '../http/log-destination.js'
import type { Media } from '../media/media-service.js'
import type { PlatformMetrics } from '../metrics/metrics.js'
import type { RecordingEvents } from '../recordings/recording-events.js'
import type { Database } from '../storage/database.js'

export interface PlatformContext {
  config: PlatformConfig
  db: Database
  tokens: AccessTokens
  /** Enterprises' keys and disabled flags, shared by the requests of this instance. */
  credentials: CredentialCache
  /** The replay guard: records a request nonce, group-committed. */
  acceptNonce: NonceGuard
  /** Epoch milliseconds; injected so tests can move time. */
  clock: () => number
  randomBytes: (size: number) => Buffer
  metrics: PlatformMetrics
  /** Told of every recording part stored and every deletion, in its transaction (deliveries/ schedules its deliveries). */
  recordingEvents: RecordingEvents
  /** Gives a new enterprise its push URL's endpoint (a port the endpoints slice implements). */
  firstEndpoint: FirstEndpoint
  /** Stored audio and the links to it. */
  media: Media
  /** The key that signs erasure reports, and a nudge to this instance's erasure runner and retention. */
  erasures: { key: ErasureSigningKey; wake(): void }
  /** Where the JSON log lines go (stderr unless the embedding process gives another destination). */
  logDestination: LogDestination
}

export type { LogDestination }
