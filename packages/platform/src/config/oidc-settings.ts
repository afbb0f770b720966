import type { PlatformConfig } from './platform-config.js'
import { type Setting, text } from './setting-parsers.js'

/* The settings of single sign-on through an OpenID Connect provider (access/sso-routes.ts). */

type OidcKey = 'oidcIssuer' | 'oidcClientId' | 'oidcClientSecret' | 'oidcRoleClaim' | 'oidcScopeClaim'

const LOOPBACK_HOST = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/

/** An issuer URL: https, or http on loopback (a provider on this machine); no query, fragment or user. */
export function issuerUrl(raw: string): string | undefined {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return undefined
  }
  if (url.search || url.hash || url.username || url.password) return undefined
  const allowed = url.protocol === 'https:' || (url.protocol === 'http:' && LOOPBACK_HOST.test(url.hostname))
  // The provider's discovery document names its issuer exactly as given here: it is kept as written.
  return allowed ? raw : undefined
}

/** A claim's name: printable, no spaces (`roles`, `https://example.com/claims/role`). */
const claimName = (raw: string) => (/^[\x21-\x7e]{1,200}$/.test(raw) ? raw : undefined)

export const oidcSettings: { [K in OidcKey]: Setting<K> } = {
  oidcIssuer: {
    key: 'oidcIssuer',
    env: 'EARSHOT_OIDC_ISSUER',
    parse: issuerUrl,
    rule: 'an https:// URL (http:// only on loopback) without query, e.g. https://login.example.com',
    fallback: undefined,
  },
  oidcClientId: {
    key: 'oidcClientId',
    env: 'EARSHOT_OIDC_CLIENT_ID',
    parse: text,
    rule: 'the client id registered with the provider',
    fallback: undefined,
  },
  oidcClientSecret: {
    key: 'oidcClientSecret',
    env: 'EARSHOT_OIDC_CLIENT_SECRET',
    parse: text,
    rule: "the client's secret at the provider",
    fallback: undefined,
  },
  oidcRoleClaim: {
    key: 'oidcRoleClaim',
    env: 'EARSHOT_OIDC_ROLE_CLAIM',
    parse: claimName,
    rule: 'a claim name (printable, no spaces)',
    fallback: undefined,
  },
  oidcScopeClaim: {
    key: 'oidcScopeClaim',
    env: 'EARSHOT_OIDC_SCOPE_CLAIM',
    parse: claimName,
    rule: 'a claim name (printable, no spaces)',
    fallback: undefined,
  },
}

/** The single sign-on settings that go together: all three, or none. */
const TOGETHER = ['oidcIssuer', 'oidcClientId', 'oidcClientSecret'] as const

/** What is wrong with the single sign-on settings as a whole (each valid alone). */
export function oidcProblems(config: PlatformConfig): string[] {
  const envOf = (key: OidcKey) => oidcSettings[key].env
  const missing = TOGETHER.filter((key) => config[key] === undefined)
  if (missing.length > 0 && missing.length < TOGETHER.length) {
    return [
      `${TOGETHER.map(envOf).join(', ')} go together (single sign-on needs all three, or none is set): ${missing.map(envOf).join(' and ')} ${missing.length === 1 ? 'is' : 'are'} missing`,
    ]
  }
  if (missing.length === 0) return []
  return (['oidcRoleClaim', 'oidcScopeClaim'] as const)
    .filter((key) => config[key] !== undefined)
    .map(
      (key) =>
        `${envOf(key)} is set, but single sign-on is not: set ${TOGETHER.map(envOf).join(', ')} too, or unset it`,
    )
}
