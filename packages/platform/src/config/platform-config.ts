/** The platform's configuration, once config.ts has read and validated it. */
export interface PlatformConfig {
  host: string
  port: number
  adminHost: string
  adminPort: number
  /** The break-glass owner key of the admin API: off unless set; every use audited. */
  adminToken: string | undefined
  dataDir: string
  databaseUrl: string | undefined
  /** PostgreSQL connections per instance. */
  databasePoolSize: number
  tokenTtlSeconds: number
  bodyLimitBytes: number
  adminBodyLimitBytes: number
  /** Seconds a request may take to arrive whole (headers and body); on the admin listener, its headers. */
  requestTimeoutSeconds: number
  /** Seconds an admin request may take to arrive whole: a JSON Lines import up to the admin body limit. */
  adminRequestTimeoutSeconds: number
  /** Seconds an idle keep-alive connection stays open. */
  keepAliveTimeoutSeconds: number
  /** Connections each listener serves at once; one more is answered 503 (5030) and closed. */
  maxConnections: number
  /** Connections one client address (an IPv6 client's /64) may hold on a listener at once; 0: no cap. */
  maxConnectionsPerClient: number
  /** Seconds a request's headers may take to arrive (its body gets the rest of the request timeout). */
  headersTimeoutSeconds: number
  /**
   * Seconds an answer with bytes waiting for its reader may go without the reader taking
   * minSendRateBytes a second of them; then its connection is closed.
   */
  writeTimeoutSeconds: number
  /** Bytes a second a reader must take, on average over each writeTimeoutSeconds, while bytes wait for it. */
  minSendRateBytes: number
  /**
   * Seconds a token request's nonce is refused again (its replay would yield a token). A request made with
   * a bearer token keeps its nonce only until that token expires: replayed later, it gets 4011. Never
   * below the token lifetime.
   */
  replayWindowSeconds: number
  /**
   * Seconds a request carrying issuedAt is accepted after it was sealed (4011 later); its nonce is kept
   * only that long (plus 60 s).
   */
  requestMaxAgeSeconds: number
  keyGraceSeconds: number
  /** Requests per enterprise per minute on each instance; 0 turns the limit off. */
  rateLimitPerMinute: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** Seconds that shutdown waits for in-flight requests before closing connections. */
  shutdownGraceSeconds: number
  /** On a fresh database, create a demo enterprise with sample recordings. */
  demo: boolean
  /** Seconds to wait after each failed push attempt; after the last, the delivery fails. */
  pushRetryScheduleSeconds: number[]
  /** Seconds an acknowledged push waits for its receipt callback before it is pushed again. */
  pushConfirmWindowSeconds: number
  /** Seconds a push attempt may take, response included. */
  pushTimeoutSeconds: number
  /** Allow loopback and private push addresses (tests, on-premises partners). */
  pushAllowPrivate: boolean
  /** Run the push dispatcher inside this process (off when separate `earshot worker`s push). */
  pushDispatch: boolean
  /** Ports a push URL may name: single ports and ranges (`1024-65535`). */
  pushPorts: string[]
  /** Receiver checks running at once per instance, over all enterprises. */
  receiverChecks: number
  /** Receiver checks of one enterprise running at once per instance. */
  receiverChecksPerEnterprise: number
  /** Push attempts in flight at once, over all push URLs, per instance. */
  pushConcurrency: number
  /** Push attempts in flight at once to one push URL, per instance. */
  pushConcurrencyPerUrl: number
  /** Seconds a push URL may fail with no success before it is disabled. */
  pushDisableAfterSeconds: number
  /** Seconds a confirmed delivery and its attempts are kept before they are pruned. */
  deliveryRetentionSeconds: number
  /** The partner listener's address as partners reach it, for media links; default the listener's own. */
  publicUrl: string | undefined
  /** Seconds a media link minted in an answer stays valid. */
  mediaUrlTtlSeconds: number
  /** Bytes an uploaded audio file may have at most. */
  mediaMaxBytes: number
  /** Downloads of one media link in progress at once per instance. */
  mediaDownloadsPerLink: number
  /** Downloads of one enterprise's media in progress at once per instance. */
  mediaDownloadsPerEnterprise: number
  /** Seconds an upload's claim on its file holds, from its start and again once stored, by the database's clock. */
  mediaUploadGraceSeconds: number
  /** The directory of stored audio; default `<data dir>/media`. */
  mediaDir: string | undefined
  /** Store audio in this S3-compatible bucket instead of the directory. */
  mediaS3Bucket: string | undefined
  /** Address the bucket by path (most S3-compatible servers other than AWS want it). */
  mediaS3ForcePathStyle: boolean
  /** The Content-Types an audio upload may have (lower-case `audio/<subtype>`); no other is stored or served. */
  mediaAudioTypes: string[]
  /** Whether an operator's denoiseUrl may be an `http:` URL (`https:` always may; no other scheme). */
  denoiseUrlAllowHttp: boolean
  /** Seconds a console session lasts without a request. */
  sessionIdleSeconds: number
  /** Seconds a console session lasts at most, however busy. */
  sessionMaxSeconds: number
  /** How long a portal link may wait to be opened (EARSHOT_PORTAL_LINK_TTL). */
  portalLinkSeconds: number
  /** How long a portal session lasts (EARSHOT_PORTAL_SESSION_TTL). */
  portalSessionSeconds: number
  /** Days the audit trail keeps its rows; older ones are pruned, their last hash kept as the chain's anchor. */
  auditRetentionDays: number
  /** Recordings an erasure deletes per transaction (EARSHOT_ERASURE_BATCH). */
  erasureBatch: number
  /** Recordings an erasure deletes a second at most, on each instance (EARSHOT_ERASURE_RATE). */
  erasureRate: number
  /** Seconds an instance holds an erasure it runs before another may take it over (EARSHOT_ERASURE_LEASE). */
  erasureLeaseSeconds: number
  /** The OpenID Connect provider of single sign-on, by its issuer URL; unset: no single sign-on. */
  oidcIssuer: string | undefined
  /** The client id the platform is registered with at the provider. */
  oidcClientId: string | undefined
  /** The client's secret (client_secret_basic): never shown in a refusal or the log. */
  oidcClientSecret: string | undefined
  /** A claim naming the role an operator unknown to the platform gets on first sign-in; unset: none. */
  oidcRoleClaim: string | undefined
  /** A claim listing the enterprises such an operator is limited to; unset: every enterprise. */
  oidcScopeClaim: string | undefined
}
