/**
 * The platform's configuration: read from environment variables (EARSHOT_…) and CLI
 * flags, validated once at start. A wrong value stops the process with a message naming it.
 */
import { oidcProblems } from './oidc-settings.js'
import type { PlatformConfig } from './platform-config.js'
import type { Setting } from './setting-parsers.js'
import { HIDDEN_SETTINGS, settings } from './settings.js'

export type { PlatformConfig } from './platform-config.js'
export { DEFAULT_AUDIO_TYPES, DEFAULT_PUSH_PORTS, DEFAULT_RETRY_SCHEDULE_SECONDS } from './setting-parsers.js'

export class ConfigError extends Error {
  readonly code = 'invalid_config'
}

type Source = Record<string, string | undefined>

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
      const shown = HIDDEN_SETTINGS.has(setting.key) ? '(hidden)' : JSON.stringify(raw)
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
  problems.push(...oidcProblems(config))
  return problems
}

function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)
}
