import { PARTNER_BODY_LIMIT } from '@earshot/protocol'
import { erasureSettings } from './erasure-settings.js'
import { oidcSettings } from './oidc-settings.js'
import type { PlatformConfig } from './platform-config.js'
import {
  DEFAULT_AUDIO_TYPES,
  DEFAULT_PUSH_PORTS,
  DEFAULT_RETRY_SCHEDULE_SECONDS,
  decimalSeconds,
  flag,
  integer,
  isPortOrRange,
  logLevels,
  port,
  type Setting,
  seconds,
  text,
} from './setting-parsers.js'

/** Every setting, in the order the docs list them. */
export const settings: { [K in keyof PlatformConfig]: Setting<K> } = {
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
  sessionIdleSeconds: {
    key: 'sessionIdleSeconds',
    env: 'EARSHOT_SESSION_IDLE',
    ...seconds(60),
    fallback: 3600,
  },
  sessionMaxSeconds: {
    key: 'sessionMaxSeconds',
    env: 'EARSHOT_SESSION_MAX',
    ...seconds(60),
    fallback: 12 * 3600,
  },
  portalLinkSeconds: {
    key: 'portalLinkSeconds',
    env: 'EARSHOT_PORTAL_LINK_TTL',
    ...seconds(60),
    fallback: 15 * 60,
  },
  portalSessionSeconds: {
    key: 'portalSessionSeconds',
    env: 'EARSHOT_PORTAL_SESSION_TTL',
    ...seconds(60),
    fallback: 8 * 3600,
  },
  auditRetentionDays: {
    key: 'auditRetentionDays',
    env: 'EARSHOT_AUDIT_RETENTION',
    parse: integer(1, 100_000),
    rule: 'a number of days from 1',
    fallback: 400,
  },
  ...erasureSettings,
  ...oidcSettings,
}

/** Settings whose values never appear in a refusal of the configuration: they hold credentials. */
export const HIDDEN_SETTINGS: ReadonlySet<keyof PlatformConfig> = new Set([
  'adminToken',
  'databaseUrl',
  'oidcClientSecret',
])
