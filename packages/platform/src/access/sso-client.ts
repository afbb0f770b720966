import * as oidc from 'openid-client'
import type { PlatformConfig } from '../config/platform-config.js'
import type { PendingSignIn } from './sso-states.js'

/**
 * The platform as an OpenID Connect relying party (openid-client): the authorization code flow with PKCE
 * (S256), state and nonce; the ID token's signature, issuer, audience, expiry and nonce are checked by the
 * library. The provider's metadata is discovered on the first sign-in and kept (again after a failure).
 */
export interface SsoSettings {
  issuer: string
  clientId: string
  clientSecret: string
  roleClaim: string | undefined
  scopeClaim: string | undefined
}

/** Who a verified sign-in is, as the operators' accounts are matched against it. */
export interface SsoIdentity {
  /** The issuer and the provider's subject, one operator's `sso_subject`. */
  subject: string
  /** Only an email the provider says is verified. */
  email: string | undefined
  name: string
  claims: Readonly<Record<string, unknown>>
}

/** A refused sign-in: what the console shows, and the reason the audit trail keeps. */
export class SsoRefusal extends Error {
  constructor(
    readonly shown: string,
    readonly reason: string,
    readonly operatorId?: number,
  ) {
    super(reason)
  }
}

const SCOPE = 'openid email profile'

export function ssoSettings(config: PlatformConfig): SsoSettings | undefined {
  const { oidcIssuer, oidcClientId, oidcClientSecret } = config
  if (oidcIssuer === undefined || oidcClientId === undefined || oidcClientSecret === undefined)
    return undefined
  return {
    issuer: oidcIssuer,
    clientId: oidcClientId,
    clientSecret: oidcClientSecret,
    roleClaim: config.oidcRoleClaim,
    scopeClaim: config.oidcScopeClaim,
  }
}

/** The subject prefix of every operator this issuer signed in: `sso_subject` is `<issuer> <sub>`. */
export function subjectPrefix(issuer: string): string {
  return `${issuer} `
}

export class RelyingParty {
  #discovered: Promise<oidc.Configuration> | undefined

  constructor(readonly settings: SsoSettings) {}

  /** The provider's metadata, discovered once; a failed discovery is tried again by the next sign-in. */
  configuration(): Promise<oidc.Configuration> {
    this.#discovered ??= oidc
      .discovery(
        new URL(this.settings.issuer),
        this.settings.clientId,
        this.settings.clientSecret,
        oidc.ClientSecretBasic(this.settings.clientSecret),
        // Config allows http:// only for a provider on loopback.
        this.settings.issuer.startsWith('http:') ? { execute: [oidc.allowInsecureRequests] } : undefined,
      )
      .catch((error: unknown) => {
        this.#discovered = undefined
        throw error
      })
    return this.#discovered
  }

  /** Where the browser signs in at the provider. */
  async authorizationUrl(state: string, pending: PendingSignIn): Promise<URL> {
    const configuration = await this.configuration()
    return oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: pending.redirectUri,
      scope: SCOPE,
      state,
      nonce: pending.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(pending.codeVerifier),
      code_challenge_method: 'S256',
    })
  }

  /**
   * Exchanges the code the provider sent back and verifies the ID token; the claims the ID token lacks
   * (some providers give the email or a custom claim only there) are read from the userinfo endpoint.
   */
  async identity(callbackUrl: URL, state: string, pending: PendingSignIn): Promise<SsoIdentity> {
    const configuration = await this.configuration()
    const tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
      pkceCodeVerifier: pending.codeVerifier,
      expectedState: state,
      expectedNonce: pending.nonce,
      idTokenExpected: true,
    })
    const idToken = tokens.claims()
    if (!idToken) throw new SsoRefusal(UNVERIFIED, 'the token answer held no ID token')
    let claims: Record<string, unknown> = { ...idToken }
    const wanted = ['email', 'email_verified', this.settings.roleClaim, this.settings.scopeClaim]
    if (
      wanted.some((claim) => claim !== undefined && !(claim in claims)) &&
      configuration.serverMetadata().userinfo_endpoint !== undefined
    ) {
      claims = { ...(await oidc.fetchUserInfo(configuration, tokens.access_token, idToken.sub)), ...idToken }
    }
    const verified = claims.email_verified === true || claims.email_verified === 'true'
    return {
      subject: `${subjectPrefix(this.settings.issuer)}${idToken.sub}`,
      email: verified && typeof claims.email === 'string' ? claims.email : undefined,
      name: typeof claims.name === 'string' ? claims.name.slice(0, 200) : '',
      claims,
    }
  }
}

const UNVERIFIED = "the identity provider's answer could not be verified: start again, or tell an owner"

/** What a failure of the flow is, for the console and the audit trail. */
export function refusalOf(error: unknown): SsoRefusal {
  if (error instanceof SsoRefusal) return error
  if (error instanceof oidc.AuthorizationResponseError) {
    return new SsoRefusal(
      `the identity provider did not sign you in (${error.error.slice(0, 60)})`,
      providerReason(error.error, error.error_description),
    )
  }
  if (error instanceof oidc.ResponseBodyError) {
    return new SsoRefusal(
      'the identity provider refused the sign-in code (expired or used): start again',
      providerReason(error.error, error.error_description),
    )
  }
  if (error instanceof TypeError || (error instanceof Error && error.name === 'TimeoutError')) {
    return new SsoRefusal('the identity provider could not be reached: try again later', error.message)
  }
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : ''
  return new SsoRefusal(UNVERIFIED, `${error instanceof Error ? error.message : String(error)}${cause}`)
}

function providerReason(error: string, description: string | undefined): string {
  return `${error}${description ? `: ${description}` : ''}`.slice(0, 300)
}

const parties = new WeakMap<PlatformConfig, RelyingParty>()

/** The platform's relying party (one per configuration, so its discovery is kept); undefined when off. */
export function relyingPartyOf(config: PlatformConfig): RelyingParty | undefined {
  const known = parties.get(config)
  if (known) return known
  const settings = ssoSettings(config)
  if (!settings) return undefined
  const party = new RelyingParty(settings)
  parties.set(config, party)
  return party
}
