/**
 * The platform's configuration: read from environment variables (EARSHOT_…) and CLI
 * flags, validated once at start. A wrong value stops the process with a message naming it.
 */
import { PARTNER_BODY_LIMIT } from '@earshot/protocol'

export interface PlatformConfig {
  host: string
  port: number
  adminHost: string
  adminPort: number
  /** Bearer token of the admin API; generated (and printed once) by `serve` when unset. */
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
}

export class ConfigError extends Error {
  readonly code = 'invalid_config'
}

type Source = Record<string, string | undefined>

interface Setting<K extends keyof PlatformConfig> {
  key: K
  env: string
  parse: (raw: string) => PlatformConfig[K] | undefined
  rule: string
  fallback: PlatformConfig[K]
  /** The default under `--demo` (EARSHOT_DEMO=1), when it differs: a demo runs on one machine. */
  demoFallback?: PlatformConfig[K]
}

const integer =
  (min: number, max: number) =>
  (raw: string): number | undefined => {
    if (!/^\d+$/.test(raw)) return undefined
    const value = Number(raw)
    return value >= min && value <= max ? value : undefined
  }
const text = (raw: string) => (raw.length > 0 ? raw : undefined)
const port = { parse: integer(0, 65_535), rule: 'an integer from 0 to 65535' }
const seconds = (min: number) => ({
  parse: integer(min, 10 * 365 * 86_400),
  rule: `a whole number of seconds ≥ ${min}`,
})
const decimalSeconds =
  (min: number, max: number) =>
  (raw: string): number | undefined => {
    if (!/^\d+(\.\d{1,3})?$/.test(raw)) return undefined
    const value = Number(raw)
    return value >= min && value <= max ? value : undefined
  }
const flag = (raw: string) =>
  raw === '1' || raw === 'true' ? true : raw === '0' || raw === 'false' ? false : undefined
/** 15s, 15s, 30s, 3m, 10m, 20m, 30m, 30m, 30m, 1h, 3h, 3h, 3h, 6h, 6h. */
export const DEFAULT_RETRY_SCHEDULE_SECONDS = [
  15, 15, 30, 180, 600, 1200, 1800, 1800, 1800, 3600, 10_800, 10_800, 10_800, 21_600, 21_600,
]
/** The audio an upload may be unless EARSHOT_MEDIA_AUDIO_TYPES says otherwise. */
export const DEFAULT_AUDIO_TYPES = [
  'audio/wav',
  'audio/x-wav',
  'audio/wave',
  'audio/mpeg',
  'audio/mp4',
  'audio/aac',
  'audio/ogg',
  'audio/opus',
  'audio/flac',
  'audio/webm',
]
const portNumber = integer(1, 65_535)
/** `443` or `1024-65535`. */
const isPortOrRange = (part: string) => {
  const bounds = part.split('-').map(portNumber)
  const [from, to = from] = bounds
  return bounds.length <= 2 && from !== undefined && to !== undefined && from <= to
}
/** The well-known web ports and the unprivileged ones: not SMTP (25), SSH (22) or another service's. */
export const DEFAULT_PUSH_PORTS = ['80', '443', '1024-65535']
const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

const settings: { [K in keyof PlatformConfig]: Setting<K> } = {
  host: {
    key: 'host',
    env: 'EARSHOT_HOST',
    parse: text,
    rule: 'a host name or address',
    fallback: '127.0.0.1',
  },
  port: { key: 'port', env: 'EARSHOT_PORT', ...port, fallback: 8080 },
  adminHost: {
    key: 'adminHost',
    env: 'EARSHOT_ADMIN_HOST',
    parse: text,
    rule: 'a host name or address',
    fallback: '127.0.0.1',
  },
  adminPort: { key: 'adminPort', env: 'EARSHOT_ADMIN_PORT', ...port, fallback: 8081 },
  adminToken: {
    key: 'adminToken',
    env: 'EARSHOT_ADMIN_TOKEN',
    parse: (raw) => (raw.length >= 16 ? raw : undefined),
    rule: 'at least 16 characters',
    fallback: undefined,
  },
  dataDir: {
    key: 'dataDir',
    env: 'EARSHOT_DATA_DIR',
    parse: text,
    rule: 'a directory path',
    fallback: './.earshot/data',
  },
  databaseUrl: {
    key: 'databaseUrl',
    env: 'DATABASE_URL',
    parse: (raw) => (/^postgres(ql)?:\/\//.test(raw) ? raw : undefined),
    rule: 'a postgres:// or postgresql:// URL',
    fallback: undefined,
  },
  databasePoolSize: {
    key: 'databasePoolSize',
    env: 'EARSHOT_DB_POOL',
    parse: integer(1, 1000),
    rule: 'a number of connections from 1 to 1000',
    fallback: 20,
  },
  tokenTtlSeconds: { key: 'tokenTtlSeconds', env: 'EARSHOT_TOKEN_TTL', ...seconds(1), fallback: 7200 },
  bodyLimitBytes: {
    key: 'bodyLimitBytes',
    env: 'EARSHOT_BODY_LIMIT',
    parse: integer(1024, PARTNER_BODY_LIMIT.maxBytes),
    rule: `a number of bytes from 1024 to ${PARTNER_BODY_LIMIT.maxBytes}`,
    fallback: PARTNER_BODY_LIMIT.defaultBytes,
  },
  adminBodyLimitBytes: {
    key: 'adminBodyLimitBytes',
    env: 'EARSHOT_ADMIN_BODY_LIMIT',
    parse: integer(1024, 2 * 1024 * 1024 * 1024),
    rule: 'a number of bytes from 1024 to 2 GiB',
    fallback: 512 * 1024 * 1024,
  },
  requestTimeoutSeconds: {
    key: 'requestTimeoutSeconds',
    env: 'EARSHOT_REQUEST_TIMEOUT',
    parse: decimalSeconds(0.01, 3600),
    rule: 'seconds from 0.01 to 3600',
    fallback: 30,
  },
  adminRequestTimeoutSeconds: {
    key: 'adminRequestTimeoutSeconds',
    env: 'EARSHOT_ADMIN_REQUEST_TIMEOUT',
    parse: decimalSeconds(0.01, 86_400),
    rule: 'seconds from 0.01 to 86400',
    // 512 MiB (the default admin body limit) at 150 KB/s.
    fallback: 3600,
  },
  keepAliveTimeoutSeconds: {
    key: 'keepAliveTimeoutSeconds',
    env: 'EARSHOT_KEEP_ALIVE_TIMEOUT',
    parse: decimalSeconds(0.01, 3600),
    rule: 'seconds from 0.01 to 3600',
    // Above the 60 s idle timeout of common load balancers, so that they close first and never send a
    // request on a connection the platform is closing.
    fallback: 72,
  },
  maxConnections: {
    key: 'maxConnections',
    env: 'EARSHOT_MAX_CONNECTIONS',
    parse: integer(1, 1_000_000),
    rule: 'a number of connections from 1 to 1000000',
    // An idle keep-alive connection costs the process about 10-12 KiB: 4096 of them about 45 MiB.
    fallback: 4096,
  },
  maxConnectionsPerClient: {
    key: 'maxConnectionsPerClient',
    env: 'EARSHOT_MAX_CONNECTIONS_PER_CLIENT',
    parse: integer(0, 1_000_000),
    rule: 'a number of connections from 0 (no cap per client, behind a proxy that caps) to 1000000',
    // Several times the connection pool of a busy partner; one client then holds at most 1/32 of a listener.
    fallback: 128,
  },
  headersTimeoutSeconds: {
    key: 'headersTimeoutSeconds',
    env: 'EARSHOT_HEADERS_TIMEOUT',
    parse: decimalSeconds(0.01, 3600),
    rule: 'seconds from 0.01 to 3600',
    // A request's headers (a few hundred bytes) arrive within a round trip; a slow sender is cut well
    // before it could matter.
    fallback: 10,
  },
  writeTimeoutSeconds: {
    key: 'writeTimeoutSeconds',
    env: 'EARSHOT_WRITE_TIMEOUT',
    parse: decimalSeconds(0.01, 3600),
    rule: 'seconds from 0.01 to 3600',
    fallback: 30,
  },
  minSendRateBytes: {
    key: 'minSendRateBytes',
    env: 'EARSHOT_MIN_SEND_RATE',
    parse: integer(0, 1024 ** 3),
    rule: 'bytes a second from 0 (any progress will do) to 1073741824',
    // 32 kbit/s: a 30 MB file may take up to 2 hours.
    fallback: 4096,
  },
  replayWindowSeconds: {
    key: 'replayWindowSeconds',
    env: 'EARSHOT_REPLAY_WINDOW',
    ...seconds(1),
    fallback: 365 * 86_400,
  },
  requestMaxAgeSeconds: {
    key: 'requestMaxAgeSeconds',
    env: 'EARSHOT_REQUEST_MAX_AGE',
    parse: integer(1, 86_400),
    rule: 'a whole number of seconds from 1 to 86400',
    fallback: 300,
  },
  keyGraceSeconds: { key: 'keyGraceSeconds', env: 'EARSHOT_KEY_GRACE', ...seconds(0), fallback: 86_400 },
  rateLimitPerMinute: {
    key: 'rateLimitPerMinute',
    env: 'EARSHOT_RATE_LIMIT',
    parse: integer(0, 100_000_000),
    rule: 'requests per enterprise per minute, a whole number (0 turns the limit off)',
    fallback: 6000,
  },
  logLevel: {
    key: 'logLevel',
    env: 'EARSHOT_LOG_LEVEL',
    parse: (raw) => logLevels.find((level) => level === raw),
    rule: `one of ${logLevels.join(', ')}`,
    fallback: 'info',
  },
  shutdownGraceSeconds: {
    key: 'shutdownGraceSeconds',
    env: 'EARSHOT_SHUTDOWN_GRACE',
    ...seconds(0),
    fallback: 10,
  },
  demo: {
    key: 'demo',
    env: 'EARSHOT_DEMO',
    parse: flag,
    rule: '1 or 0',
    fallback: false,
  },
  pushRetryScheduleSeconds: {
    key: 'pushRetryScheduleSeconds',
    env: 'EARSHOT_PUSH_RETRY_SCHEDULE',
    parse: (raw) => {
      const delays = raw.split(',').map((part) => decimalSeconds(0, 7 * 86_400)(part.trim()))
      return delays.length <= 100 && delays.every((delay) => delay !== undefined) ? delays : undefined
    },
    rule: 'comma-separated seconds (up to 100 of them, each at most 7 days), e.g. 15,15,30,180',
    fallback: DEFAULT_RETRY_SCHEDULE_SECONDS,
  },
  pushConfirmWindowSeconds: {
    key: 'pushConfirmWindowSeconds',
    env: 'EARSHOT_PUSH_CONFIRM_WINDOW',
    parse: decimalSeconds(0.01, 30 * 86_400),
    rule: 'seconds from 0.01 to 30 days',
    fallback: 600,
  },
  pushTimeoutSeconds: {
    key: 'pushTimeoutSeconds',
    env: 'EARSHOT_PUSH_TIMEOUT',
    parse: decimalSeconds(0.01, 300),
    rule: 'seconds from 0.01 to 300',
    fallback: 10,
  },
  pushAllowPrivate: {
    key: 'pushAllowPrivate',
    env: 'EARSHOT_PUSH_ALLOW_PRIVATE',
    parse: flag,
    rule: '1 or 0',
    fallback: false,
    demoFallback: true,
  },
  pushDispatch: {
    key: 'pushDispatch',
    env: 'EARSHOT_PUSH_DISPATCH',
    parse: flag,
    rule: '1 or 0',
    fallback: true,
  },
  pushPorts: {
    key: 'pushPorts',
    env: 'EARSHOT_PUSH_PORTS',
    parse: (raw) => {
      const ports = raw.split(',').map((part) => part.trim())
      return ports.every(isPortOrRange) ? ports : undefined
    },
    rule: 'comma-separated ports from 1 to 65535 and ranges of them, e.g. 80,443,1024-65535',
    fallback: DEFAULT_PUSH_PORTS,
  },
  receiverChecks: {
    key: 'receiverChecks',
    env: 'EARSHOT_RECEIVER_CHECKS',
    parse: integer(1, 10_000),
    rule: 'a number of checks from 1 to 10000',
    fallback: 8,
  },
  receiverChecksPerEnterprise: {
    key: 'receiverChecksPerEnterprise',
    env: 'EARSHOT_RECEIVER_CHECKS_PER_ENTERPRISE',
    parse: integer(1, 10_000),
    rule: 'a number of checks from 1 to 10000',
    fallback: 2,
  },
  pushConcurrency: {
    key: 'pushConcurrency',
    env: 'EARSHOT_PUSH_CONCURRENCY',
    parse: integer(1, 10_000),
    rule: 'a number of attempts from 1 to 10000',
    fallback: 64,
  },
  pushConcurrencyPerUrl: {
    key: 'pushConcurrencyPerUrl',
    env: 'EARSHOT_PUSH_CONCURRENCY_PER_URL',
    parse: integer(1, 10_000),
    rule: 'a number of attempts from 1 to 10000',
    fallback: 16,
  },
  pushDisableAfterSeconds: {
    key: 'pushDisableAfterSeconds',
    env: 'EARSHOT_PUSH_DISABLE_AFTER',
    parse: decimalSeconds(0.01, 10 * 365 * 86_400),
    rule: 'seconds from 0.01 to 10 years',
    fallback: 5 * 86_400,
  },
  deliveryRetentionSeconds: {
    key: 'deliveryRetentionSeconds',
    env: 'EARSHOT_DELIVERY_RETENTION',
    ...seconds(0),
    fallback: 30 * 86_400,
  },
  publicUrl: {
    key: 'publicUrl',
    env: 'EARSHOT_PUBLIC_URL',
    parse: (raw) => (/^https?:\/\/[^/?#]+(\/[^?#]*)?$/.test(raw) ? raw.replace(/\/+$/, '') : undefined),
    rule: 'an http:// or https:// URL without query, e.g. https://api.example.com',
    fallback: undefined,
  },
  mediaUrlTtlSeconds: {
    key: 'mediaUrlTtlSeconds',
    env: 'EARSHOT_MEDIA_URL_TTL',
    ...seconds(1),
    fallback: 86_400,
  },
  mediaMaxBytes: {
    key: 'mediaMaxBytes',
    env: 'EARSHOT_MEDIA_MAX_BYTES',
    parse: integer(1, 5 * 1024 ** 4),
    rule: 'a number of bytes from 1 to 5 TiB',
    fallback: 1024 ** 3,
  },
  mediaDownloadsPerLink: {
    key: 'mediaDownloadsPerLink',
    env: 'EARSHOT_MEDIA_DOWNLOADS_PER_LINK',
    parse: integer(1, 1_000_000),
    rule: 'a number of downloads from 1 to 1000000',
    fallback: 4,
  },
  mediaDownloadsPerEnterprise: {
    key: 'mediaDownloadsPerEnterprise',
    env: 'EARSHOT_MEDIA_DOWNLOADS_PER_ENTERPRISE',
    parse: integer(1, 1_000_000),
    rule: 'a number of downloads from 1 to 1000000',
    // A quarter of the default per-client connection cap: one enterprise cannot hold a listener.
    fallback: 32,
  },
  mediaUploadGraceSeconds: {
    key: 'mediaUploadGraceSeconds',
    env: 'EARSHOT_MEDIA_UPLOAD_GRACE',
    ...seconds(60),
    fallback: 86_400,
  },
  mediaDir: {
    key: 'mediaDir',
    env: 'EARSHOT_MEDIA_DIR',
    parse: text,
    rule: 'a directory path',
    fallback: undefined,
  },
  mediaS3Bucket: {
    key: 'mediaS3Bucket',
    env: 'EARSHOT_MEDIA_S3_BUCKET',
    parse: (raw) => (/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(raw) ? raw : undefined),
    rule: 'an S3 bucket name (3 to 63 lower-case letters, digits, dots and hyphens)',
    fallback: undefined,
  },
  mediaS3ForcePathStyle: {
    key: 'mediaS3ForcePathStyle',
    env: 'EARSHOT_MEDIA_S3_FORCE_PATH_STYLE',
    parse: flag,
    rule: '1 or 0',
    fallback: false,
  },
  mediaAudioTypes: {
    key: 'mediaAudioTypes',
    env: 'EARSHOT_MEDIA_AUDIO_TYPES',
    parse: (raw) => {
      const types = raw.split(',').map((part) => part.trim().toLowerCase())
      return types.length <= 100 && types.every((type) => /^audio\/[a-z0-9][a-z0-9.+-]{0,99}$/.test(type))
        ? [...new Set(types)]
        : undefined
    },
    rule: 'comma-separated audio/<subtype> types (up to 100), e.g. audio/wav,audio/mpeg',
    fallback: DEFAULT_AUDIO_TYPES,
  },
  denoiseUrlAllowHttp: {
    key: 'denoiseUrlAllowHttp',
    env: 'EARSHOT_DENOISE_URL_ALLOW_HTTP',
    parse: flag,
    rule: '1 or 0',
    fallback: false,
  },
}

/** Every setting: its config key, environment variable, rule and default (undefined: unset), in the table's order. */
export const configEnvironment = Object.values(settings).map(({ key, env, rule, fallback }) => ({
  key,
  env,
  rule,
  fallback,
}))

/**
 * Builds the configuration from flags (already named by config key) over environment variables over
 * defaults. Throws ConfigError listing every wrong value, each with its name and rule.
 */
export function loadConfig(
  env: Source = process.env,
  flags: Partial<Record<keyof PlatformConfig, string>> = {},
): PlatformConfig {
  const problems: string[] = []
  const config = {} as Record<keyof PlatformConfig, unknown>
  const unset: Setting<keyof PlatformConfig>[] = []
  for (const setting of Object.values(settings) as Setting<keyof PlatformConfig>[]) {
    const fromFlag = flags[setting.key]
    const raw = fromFlag ?? env[setting.env]
    if (raw === undefined || (fromFlag === undefined && raw === '')) {
      config[setting.key] = setting.fallback
      unset.push(setting)
      continue
    }
    const value = setting.parse(raw)
    if (value === undefined) {
      const shown =
        setting.key === 'adminToken' || setting.key === 'databaseUrl' ? '(hidden)' : JSON.stringify(raw)
      problems.push(
        `${fromFlag === undefined ? setting.env : `--${kebab(setting.key)}`} must be ${setting.rule}; got ${shown}`,
      )
    } else {
      config[setting.key] = value
    }
  }
  if (config.demo === true)
    for (const setting of unset)
      if (setting.demoFallback !== undefined) config[setting.key] = setting.demoFallback
  if (problems.length === 0) problems.push(...crossChecks(config as PlatformConfig))
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`)
  return config as PlatformConfig
}

/** Rules between settings, each valid alone. */
function crossChecks(config: PlatformConfig): string[] {
  const problems: string[] = []
  // A shorter window would forget a token request's nonce while the token it yielded still works.
  if (config.replayWindowSeconds < config.tokenTtlSeconds) {
    problems.push(
      `EARSHOT_REPLAY_WINDOW (${config.replayWindowSeconds} s) must not be below EARSHOT_TOKEN_TTL (${config.tokenTtlSeconds} s), the longest token lifetime`,
    )
  }
  return problems
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)
}
