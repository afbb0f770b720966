import type { EarshotClientOptions } from './client-types.js'
import { EarshotConfigError } from './errors.js'

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080'
export const DEFAULT_KEY_VERSION = 1

const REQUIRED = { EARSHOT_ENTERPRISE_ID: 'your enterpriseId', EARSHOT_SECRET: 'its secret' }

type Credentials = Pick<EarshotClientOptions, 'baseUrl' | 'enterpriseId' | 'keyVersion' | 'secret'>

/**
 * The client's credentials from EARSHOT_BASE_URL (default http://127.0.0.1:8080), EARSHOT_ENTERPRISE_ID,
 * EARSHOT_KEY_VERSION (default 1) and EARSHOT_SECRET, as the CLI and the Python and Go kits read them.
 * A variable missing or malformed is refused with EarshotConfigError naming it (never echoing the secret).
 */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): Credentials {
  const missing = Object.entries(REQUIRED).filter(([name]) => !env[name])
  if (missing.length > 0) {
    const each = missing.map(([name, what]) => `${name} (${what})`)
    throw new EarshotConfigError(`set ${each.join(' and ')}, as your Earshot operator gave them`)
  }
  return {
    baseUrl: env.EARSHOT_BASE_URL || DEFAULT_BASE_URL,
    enterpriseId: positiveInteger(env, 'EARSHOT_ENTERPRISE_ID'),
    keyVersion: env.EARSHOT_KEY_VERSION ? positiveInteger(env, 'EARSHOT_KEY_VERSION') : DEFAULT_KEY_VERSION,
    secret: env.EARSHOT_SECRET as string,
  }
}

function positiveInteger(env: NodeJS.ProcessEnv, name: string): number {
  const text = (env[name] ?? '').trim()
  if (!/^\d{1,15}$/.test(text) || Number(text) < 1) {
    throw new EarshotConfigError(`${name} must be a positive integer; got ${JSON.stringify(env[name])}`)
  }
  return Number(text)
}
