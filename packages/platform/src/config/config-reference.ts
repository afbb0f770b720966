/**
 * The configuration reference, docs/configuration.md, made from the one config module (config.ts): every
 * setting's environment variable, default and accepted values come from its `settings` table, in its
 * order; what each setting is for is said here, beside them. The table sits between two markers in the
 * document; the text around it is written by hand.
 *
 *   npm run docs:config                                             rewrites the table
 *   node packages/platform/dist/config/config-reference.js --check exits 1 when the table is out of date
 *
 * A test (src/docs/docs-as-written.test.ts) fails when the document is not what this renders, and when a
 * setting has no meaning here or a meaning here names no setting.
 */
import { ConfigError, configEnvironment, loadConfig, type PlatformConfig } from './config.js'
import { cell, runWhenMain, withSection } from './generated-section.js'

export const BEGIN_MARKER = '<!-- BEGIN GENERATED: the settings of config.ts (npm run docs:config) -->'

/** The document the table is written into. */
export const CONFIGURATION_DOCUMENT = new URL('../../../../docs/configuration.md', import.meta.url)

type Key = keyof PlatformConfig

/** One setting as the reference shows it. */
export interface SettingReference {
  key: Key
  env: string
  rule: string
  /** undefined: unset by default. */
  fallback: PlatformConfig[Key]
}

/**
 * What each setting is for, by its environment variable: checked against the code it names. A setting
 * added to config.ts without a line here fails the reference's test.
 */
export const MEANINGS: Readonly<Record<string, string>> = {
  EARSHOT_HOST:
    "Address the partner API listens on. Set `0.0.0.0` (or the machine's address) to serve other machines.",
  EARSHOT_PORT:
    'Port of the partner API (`/openapi/v1/…`, `/media/v1/…`, `/healthz`, `/readyz`, `/docs`). `0`: any free port.',
  EARSHOT_ADMIN_HOST:
    'Address the admin API (and the console) listens on; keep it on loopback or a private network.',
  EARSHOT_ADMIN_PORT:
    'Port of the admin API, `/metrics`, the console (`/console`) and its `/docs`. `0`: any free port.',
  EARSHOT_ADMIN_TOKEN:
    'The break-glass owner key (at least 16 characters): a bearer token that opens every admin route, every use audited as `break-glass`. Off unless set; operators sign in with their accounts, and scripts use API keys (`EARSHOT_API_KEY`).',
  EARSHOT_DATA_DIR:
    'Directory of the embedded database (PGlite), held by one process through the lock `<dir>.lock` beside it; `memory://` keeps everything in memory, gone on exit. Ignored for the database when `DATABASE_URL` is set, but stored audio still defaults to `<dir>/media`.',
  DATABASE_URL: 'PostgreSQL to use instead of the embedded database; any number of instances may share it.',
  EARSHOT_DB_POOL: 'PostgreSQL connections each instance opens at most.',
  EARSHOT_TOKEN_TTL: 'Seconds an access token is valid (`expiresIn` of the token answer).',
  EARSHOT_BODY_LIMIT: 'Largest body of a partner API request, in bytes; larger is refused with 4130.',
  EARSHOT_ADMIN_BODY_LIMIT:
    'Largest JSON Lines import, in bytes (4130 above it; any line at most 4 MiB). Other admin requests are limited to 1 MiB, audio uploads by `EARSHOT_MEDIA_MAX_BYTES`.',
  EARSHOT_REQUEST_TIMEOUT:
    'Seconds a partner API request may take to arrive whole, headers and body; then it is answered 4080 (HTTP 408) and its connection closed.',
  EARSHOT_ADMIN_REQUEST_TIMEOUT:
    'Seconds an admin API request may take to arrive whole (then 4080 and the connection closed): the default lets 512 MiB arrive at 150 KB/s. A request without the admin token is refused (4010) and its connection closed at once.',
  EARSHOT_KEEP_ALIVE_TIMEOUT:
    "Seconds an idle keep-alive connection stays open, on both listeners. Keep a load balancer's idle timeout below it (the default is above the common 60 s).",
  EARSHOT_MAX_CONNECTIONS:
    'Connections each listener serves at once; one more is answered 503 (5030) and closed. An idle connection costs about 10–12 KiB. Keep `ulimit -n` above twice this per listener plus `EARSHOT_DB_POOL`.',
  EARSHOT_MAX_CONNECTIONS_PER_CLIENT:
    "Connections one client address (an IPv6 client's /64) may hold on a listener; more are answered 503 (5030). `0` behind a reverse proxy, which has one address for every client: let it cap each client.",
  EARSHOT_HEADERS_TIMEOUT:
    "Seconds any request's headers may take to arrive, on both listeners (never more than the request timeout); then 4080 (HTTP 408) and the connection closed.",
  EARSHOT_WRITE_TIMEOUT:
    'Seconds an answer with bytes waiting for its reader (a download, the API reference) may go without the reader taking `EARSHOT_MIN_SEND_RATE` bytes a second of them; then its connection is closed, on both listeners, and counts against no cap.',
  EARSHOT_MIN_SEND_RATE:
    'Bytes a second a reader must take, on average over each `EARSHOT_WRITE_TIMEOUT`, while bytes wait for it. `0`: any progress will do; a reader that takes nothing is cut all the same.',
  EARSHOT_REPLAY_WINDOW:
    "Seconds a token request's nonce is remembered, refusing its replay with 4090 (a replay would yield a token); never below `EARSHOT_TOKEN_TTL`. A request made with a bearer token keeps its nonce until the token expires, plus 5 minutes for clocks that differ. A request carrying `issuedAt` keeps it only for `EARSHOT_REQUEST_MAX_AGE` plus 60 s.",
  EARSHOT_REQUEST_MAX_AGE:
    "Seconds after its `issuedAt` a sealed request is still accepted; older, or more than 60 s ahead of the platform's clock, it is refused with 4011. Requests without `issuedAt` are not bound by it unless their enterprise requires it (`earshot enterprise update ID --require-issued-at true`).",
  EARSHOT_SESSION_IDLE:
    'Seconds a console session lasts without a request; then its operator signs in again.',
  EARSHOT_SESSION_MAX: 'Seconds a console session lasts at most, however busy.',
  EARSHOT_PORTAL_LINK_TTL:
    'Seconds a one-time link into the partner portal may wait to be opened (`earshot portal link`, `POST /openapi/v1/portal/link`).',
  EARSHOT_PORTAL_SESSION_TTL: 'Seconds a partner portal session lasts once its link was opened.',
  EARSHOT_AUDIT_RETENTION:
    'Days the audit trail keeps its rows. Older rows are pruned; the last pruned hash is kept, so `earshot audit verify` still checks the chain.',
  EARSHOT_ERASURE_BATCH:
    'Recordings an erasure or a retention run deletes per transaction. After each batch the runner rests at least four times as long as the batch took, so that partner requests never queue behind a run of batches.',
  EARSHOT_ERASURE_RATE:
    'Recordings an erasure or a retention run deletes a second at most, on each instance. Each deletion is pushed to every subscribed endpoint: the rate bounds the push load an erasure adds, so that other partners do not notice it.',
  EARSHOT_ERASURE_LEASE:
    'Seconds an instance holds an erasure it is running; if it dies, another instance (or this one restarted) takes the erasure over after this and finishes it.',
  EARSHOT_KEY_GRACE: 'Seconds a rotated-out keyVersion keeps working after `earshot enterprise rotate-key`.',
  EARSHOT_RATE_LIMIT:
    'Token, query, change feed and callback requests per enterprise per minute, on each instance; above it 4290 with `Retry-After`. `0` turns the limit off.',
  EARSHOT_LOG_LEVEL:
    'Level of the JSON log lines written to stderr (pino). Logs never hold secrets, tokens, bodies or query strings.',
  EARSHOT_SHUTDOWN_GRACE:
    'Seconds SIGTERM (or SIGINT) waits for requests and push attempts in flight before cutting them off; attempts cut off are recorded as aborted and pushed again.',
  EARSHOT_DEMO:
    '`1` (or `earshot serve --demo`, as `npm start` does): on a database without enterprises, create a demo enterprise with sample recordings.',
  EARSHOT_PUSH_RETRY_SCHEDULE:
    'Seconds to wait after each failed push attempt (±10% jitter); after the last, the delivery is `failed`. The default is 15s, 15s, 30s, 3m, 10m, 20m, 30m, 30m, 30m, 1h, 3h, 3h, 3h, 6h, 6h.',
  EARSHOT_PUSH_CONFIRM_WINDOW:
    'Seconds an acknowledged push waits for its receipt callback before it is pushed again (same eventId, at most 3 times; then `unconfirmed`).',
  EARSHOT_PUSH_TIMEOUT:
    'Seconds a push attempt may take, connection and answer included; then it is a failed attempt.',
  EARSHOT_PUSH_ALLOW_PRIVATE:
    "`1` allows push URLs on loopback and private addresses (tests, partners on the same network); `npm start`'s demo (`--demo`) allows them unless this is `0`. Link-local and cloud metadata addresses stay refused.",
  EARSHOT_PUSH_DISPATCH:
    '`0`: this instance pushes nothing, leaving it to `earshot worker` processes on the same database.',
  EARSHOT_PUSH_PORTS:
    'Ports a push URL (an endpoint, a push URL, a receiver check) may name; another is refused with 4001. The default keeps pushes off the well-known ports of other services (`:25`, `:22`, …).',
  EARSHOT_RECEIVER_CHECKS:
    'Receiver checks running at once on this instance, over every enterprise; one more is refused with 4290 and `Retry-After`.',
  EARSHOT_RECEIVER_CHECKS_PER_ENTERPRISE:
    "Receiver checks of one enterprise running at once on this instance; one more is refused with 4290 and `Retry-After`. A check ends when its caller's connection closes.",
  EARSHOT_PUSH_CONCURRENCY: 'Push attempts in flight at once on this instance, over every push URL.',
  EARSHOT_PUSH_CONCURRENCY_PER_URL:
    "Push attempts in flight at once to one endpoint on this instance, so that a slow partner cannot take every slot (an endpoint's `maxPerSecond` limits it further, across instances). Keep `EARSHOT_PUSH_CONCURRENCY` several times larger.",
  EARSHOT_PUSH_DISABLE_AFTER:
    'Seconds a push URL may fail with no success before it is disabled and its deliveries held (an answer 410 Gone disables it at once); `earshot endpoints enable URL` resumes it.',
  EARSHOT_DELIVERY_RETENTION:
    'Seconds a confirmed delivery and its attempts are kept before they are deleted (every 10 minutes, a thousand at a time). Deliveries in any other final state (failed, unconfirmed, cancelled) are kept whatever their age.',
  EARSHOT_PUBLIC_URL:
    "Where partners reach the partner API, used in the links to stored audio (e.g. `https://api.example.com` behind a proxy). Unset, an instance uses its partner listener's address, and `earshot worker` `http://localhost:<EARSHOT_PORT>`: set it whenever partners are not on this machine.",
  EARSHOT_MEDIA_URL_TTL: 'Seconds a link to stored audio stays valid; querying again gives a fresh link.',
  EARSHOT_MEDIA_MAX_BYTES:
    'Largest audio upload, in bytes (4130 above it); it must also arrive within `EARSHOT_ADMIN_REQUEST_TIMEOUT`.',
  EARSHOT_MEDIA_DOWNLOADS_PER_LINK:
    'Downloads of one media link in progress at once on this instance; one more is refused with 4290 and `Retry-After`.',
  EARSHOT_MEDIA_DOWNLOADS_PER_ENTERPRISE:
    "Downloads of one enterprise's stored audio in progress at once on this instance; one more is refused with 4290 and `Retry-After`.",
  EARSHOT_MEDIA_UPLOAD_GRACE:
    "Seconds an audio upload holds its claim on the file it stores, counted by the database's clock from its start and again once the file is stored: the orphan sweep removes no file an upload claims. An upload still unfinished this long after it started, or not yet committed this long after its file was stored, fails and its file is swept. Keep it well above `EARSHOT_ADMIN_REQUEST_TIMEOUT`.",
  EARSHOT_MEDIA_DIR:
    'Directory of stored audio. Unset, `<EARSHOT_DATA_DIR>/media` (with `memory://`, a temporary directory removed on exit). Instances sharing a database must share it (one volume).',
  EARSHOT_MEDIA_S3_BUCKET:
    "Store audio in this S3-compatible bucket instead of a directory; endpoint, region and credentials come from the AWS SDK's own settings (`AWS_ENDPOINT_URL_S3`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, …).",
  EARSHOT_MEDIA_S3_FORCE_PATH_STYLE:
    '`1`: address the bucket by path (`https://host/bucket/key`), as most S3-compatible servers other than AWS want.',
  EARSHOT_MEDIA_AUDIO_TYPES:
    'The Content-Types an audio upload may have; any other is refused (4150, naming the list), and only these are stored and served. Parameters (`; codecs=…`) are dropped.',
  EARSHOT_DENOISE_URL_ALLOW_HTTP:
    '`1`: an operator may give a recording an `http:` denoiseUrl (partners then fetch its audio unencrypted). `https:` is always allowed, any other scheme (`javascript:`, `data:`, …) never (4001).',
  EARSHOT_OIDC_ISSUER:
    "Single sign-on to the console through this OpenID Connect provider (its issuer, as its discovery document names it), read on the first sign-in. Set with `EARSHOT_OIDC_CLIENT_ID` and `EARSHOT_OIDC_CLIENT_SECRET`, or not at all; register `<admin URL>/admin/v1/sso/callback` as the client's redirect URI.",
  EARSHOT_OIDC_CLIENT_ID: "The platform's client id at the provider.",
  EARSHOT_OIDC_CLIENT_SECRET:
    "The client's secret, sent to the provider's token endpoint by HTTP Basic (`client_secret_basic`). Never shown in a refusal or a log line.",
  EARSHOT_OIDC_ROLE_CLAIM:
    'A claim whose value is a role name (`owner`, `admin`, `operator`, `viewer`): a person the platform does not know gets an operator with that role on their first sign-in. Unset, only operators an owner added (`earshot operators add EMAIL`) may sign in.',
  EARSHOT_OIDC_SCOPE_CLAIM:
    'A claim listing the enterprise ids (or `*` for all) an operator made from `EARSHOT_OIDC_ROLE_CLAIM` is limited to; without it that operator is refused. Unset, such operators see every enterprise.',
}

/**
 * Every setting of config.ts in its order, with its config key and default. Taken as they are from
 * `configEnvironment` once it carries `key` and `fallback`; until then the keys and defaults are those of
 * `loadConfig({})`, which reads the same table in the same order (checked: each key's rule, as a refusal of
 * its flag states it, must be the rule configEnvironment gives at the same place).
 */
export function settingReferences(): SettingReference[] {
  const entries = configEnvironment as readonly { env: string; rule: string; key?: Key; fallback?: unknown }[]
  if (entries.every((entry) => entry.key !== undefined && 'fallback' in entry)) {
    return entries.map(({ env, rule, key, fallback }) => ({
      env,
      rule,
      key: key as Key,
      fallback: fallback as PlatformConfig[Key],
    }))
  }
  const defaults = loadConfig({})
  const keys = Object.keys(defaults) as Key[]
  if (keys.length !== entries.length) {
    throw new Error(`config.ts has ${keys.length} settings but configEnvironment lists ${entries.length}`)
  }
  return entries.map(({ env, rule }, index) => {
    const key = keys[index] as Key
    const stated = ruleOfFlag(key)
    if (stated !== rule) {
      throw new Error(
        `config.ts: the setting at place ${index + 1} is ${key} with the rule "${stated}", but configEnvironment gives ${env} with "${rule}"`,
      )
    }
    return { env, rule, key, fallback: defaults[key] }
  })
}

/** The rule a setting states when its flag is given empty, which every setting refuses. */
function ruleOfFlag(key: Key): string | undefined {
  try {
    loadConfig({}, { [key]: '' })
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    return / must be (.*); got (?:""|\(hidden\))$/m.exec(error.message)?.[1]
  }
  return undefined
}

/** The markdown table of every setting. Throws when a setting has no meaning, or a meaning no setting. */
export function configurationTable(settings: readonly SettingReference[] = settingReferences()): string {
  const missing = settings.filter(({ env }) => MEANINGS[env] === undefined).map(({ env }) => env)
  const known = new Set(settings.map(({ env }) => env))
  const stale = Object.keys(MEANINGS).filter((env) => !known.has(env))
  if (missing.length > 0 || stale.length > 0) {
    throw new Error(
      [
        missing.length > 0 &&
          `config-reference.ts has no meaning for ${missing.join(', ')}: add one to MEANINGS`,
        stale.length > 0 &&
          `config-reference.ts has a meaning for ${stale.join(', ')}, which config.ts lacks`,
      ]
        .filter(Boolean)
        .join('; '),
    )
  }
  return [
    '| variable | default | accepted values | what it sets |',
    '|---|---|---|---|',
    ...settings.map(
      (setting) =>
        `| \`${setting.env}\` | ${cell(shownDefault(setting))} | ${cell(setting.rule)} | ${cell(MEANINGS[setting.env] as string)} |`,
    ),
  ].join('\n')
}

/** The document with the table between its markers replaced by the current one. */
export function withCurrentTable(document: string, table: string = configurationTable()): string {
  return withSection(document, BEGIN_MARKER, table, 'docs/configuration.md')
}

function shownDefault({ key, fallback }: SettingReference): string {
  if (fallback === undefined) return '*unset*'
  if (typeof fallback === 'boolean') return `\`${fallback ? 1 : 0}\``
  if (Array.isArray(fallback)) return `\`${fallback.join(',')}\``
  if (typeof fallback === 'number') return `\`${fallback}\`${inUnits(key, fallback)}`
  return `\`${String(fallback)}\``
}

/** "(512 MiB)" for bytes, "(2 hours)" for seconds, when the number is a whole count of a larger unit. */
function inUnits(key: Key, value: number): string {
  const units: [number, string][] = key.endsWith('Bytes')
    ? [
        [1024 ** 3, 'GiB'],
        [1024 ** 2, 'MiB'],
        [1024, 'KiB'],
      ]
    : key.endsWith('Seconds')
      ? [
          [86_400, 'day'],
          [3600, 'hour'],
          [60, 'minute'],
        ]
      : []
  const unit = units.find(([size]) => value >= size && value % size === 0)
  if (!unit) return ''
  const count = value / unit[0]
  const name = key.endsWith('Bytes') ? ` ${unit[1]}` : ` ${unit[1]}${count === 1 ? '' : 's'}`
  return ` (${count}${name})`
}

runWhenMain(import.meta.url, CONFIGURATION_DOCUMENT, withCurrentTable, 'npm run docs:config')
