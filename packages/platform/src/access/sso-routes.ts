import { ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { appendToChain } from '../audit/audit-chain.js'
import { type Actor, sourceOf } from '../audit/audit-entry.js'
import { appendAudit } from '../audit/audit-trail.js'
import type { PlatformConfig } from '../config/platform-config.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import type { Database } from '../storage/database.js'
import { adminOrigin, isSecure } from './request-origin.js'
import { newSecret } from './secrets.js'
import { sessionCookie, startSession } from './sessions.js'
import { type RelyingParty, refusalOf, relyingPartyOf, type SsoIdentity, SsoRefusal } from './sso-client.js'
import { ssoCallbackContract, ssoContract, ssoStartContract } from './sso-contract.js'
import { type SsoOperator, ssoOperator } from './sso-operators.js'
import { savePendingSignIn, stateCookie, stateMatchesCookie, takePendingSignIn } from './sso-states.js'

/** What the single sign-on routes read of the running platform. */
interface SsoContext {
  db: Database
  clock: () => number
  randomBytes: (size: number) => Buffer
  config: PlatformConfig
}

const CONSOLE = '/console/'
const STALE = 'this sign-in has expired or was already used: start again'

const ssoRoute = defineRoute(ssoContract, (context: SsoContext) => async () => {
  const party = relyingPartyOf(context.config)
  return party ? { enabled: true, issuer: party.settings.issuer } : { enabled: false }
})

const ssoStartRoute = defineRoute(
  ssoStartContract,
  (context: SsoContext) =>
    async function ssoStartHandler(request, reply) {
      const party = requireParty(context.config)
      const state = newSecret(context.randomBytes)
      const pending = {
        codeVerifier: newSecret(context.randomBytes),
        nonce: newSecret(context.randomBytes),
        redirectUri: `${adminOrigin(request)}${ssoCallbackContract.path}`,
      }
      let location: URL
      try {
        location = await party.authorizationUrl(state, pending)
      } catch (error) {
        const refusal = refusalOf(error)
        request.log.warn({ reason: refusal.reason }, 'single sign-on: the provider could not be discovered')
        return reply.redirect(consoleError(refusal.shown), 302)
      }
      const now = context.clock()
      await context.db.transaction((tx) => savePendingSignIn(tx, state, pending, now))
      reply.header('set-cookie', stateCookie(state, isSecure(request)))
      return reply.redirect(location.href, 302)
    },
)

const ssoCallbackRoute = defineRoute(
  ssoCallbackContract,
  (context: SsoContext) =>
    async function ssoCallbackHandler(request, reply) {
      const party = requireParty(context.config)
      const now = context.clock()
      // The state cookie has served its one use, whatever the outcome.
      reply.header('set-cookie', stateCookie('', isSecure(request)))
      let identity: SsoIdentity | undefined
      try {
        const verified = await verifiedIdentity(context, party, request, now)
        identity = verified
        // Signed in as password sign-in does: the session and its audit row in one transaction.
        const session = await context.db.transaction(async (tx) => {
          const operator = await ssoOperator(tx, verified, party.settings, now)
          const started = await startSession(tx, operator.operatorId, now, context.randomBytes)
          await appendToChain(tx, {
            ...ssoRow(request, now, operator.operatorId),
            actor: operatorActor(operator.operatorId, operator.name),
            after: firstSignInOf(operator),
            outcome: 'ok',
          })
          return started
        })
        reply.header(
          'set-cookie',
          sessionCookie(session.token, isSecure(request), context.config.sessionMaxSeconds),
        )
        return reply.redirect(CONSOLE, 302)
      } catch (error) {
        if (!(error instanceof SsoRefusal)) throw error
        await appendAudit(context.db, {
          ...ssoRow(request, now, error.operatorId),
          actor: refusedActor(error, identity),
          after: { reason: error.reason },
          outcome: 'refused',
        })
        return reply.redirect(consoleError(error.shown), 302)
      }
    },
)

export const ssoRoutes = [ssoRoute, ssoStartRoute, ssoCallbackRoute]

/**
 * The identity the provider's redirect back vouches for: its state must be the one this browser began
 * with, still pending; then the code is exchanged and the ID token checked (sso-client.ts).
 */
async function verifiedIdentity(
  context: SsoContext,
  party: RelyingParty,
  request: FastifyRequest,
  now: number,
): Promise<SsoIdentity> {
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : ''
  const state = new URLSearchParams(query).get('state') ?? ''
  if (state === '' || !stateMatchesCookie(state, request.headers.cookie)) {
    throw new SsoRefusal(STALE, 'the state is not the one this browser began with')
  }
  const pending = await context.db.transaction((tx) => takePendingSignIn(tx, state, now))
  if (!pending) throw new SsoRefusal(STALE, 'the state is unknown, used or expired')
  const callbackUrl = new URL(pending.redirectUri)
  callbackUrl.search = query
  return party.identity(callbackUrl, state, pending).catch((error: unknown) => {
    throw refusalOf(error)
  })
}

function requireParty(config: PlatformConfig): RelyingParty {
  const party = relyingPartyOf(config)
  if (!party) {
    throw new ApiError(
      ResponseCode.NOT_FOUND,
      'single sign-on is not configured: set EARSHOT_OIDC_ISSUER, EARSHOT_OIDC_CLIENT_ID and EARSHOT_OIDC_CLIENT_SECRET',
    )
  }
  return party
}

function consoleError(message: string): string {
  return `${CONSOLE}#sso-error=${encodeURIComponent(message)}`
}

function operatorActor(operatorId: number, name: string): Actor {
  return { kind: 'operator', id: `operator:${operatorId}`, name }
}

function refusedActor(refusal: SsoRefusal, identity: SsoIdentity | undefined): Actor {
  const name = identity ? (identity.email ?? identity.subject) : 'single sign-on'
  return refusal.operatorId === undefined
    ? { kind: 'operator', id: 'unknown', name: name.slice(0, 320) }
    : operatorActor(refusal.operatorId, name)
}

function firstSignInOf({ firstSignIn }: SsoOperator): Record<string, unknown> | null {
  if (!firstSignIn) return null
  return firstSignIn.by === 'email'
    ? { firstSignIn: 'linked by verified email' }
    : { firstSignIn: 'role from claim', role: firstSignIn.role, enterprises: firstSignIn.enterprises }
}

function ssoRow(request: FastifyRequest, now: number, operatorId: number | undefined) {
  return {
    at: new Date(now).toISOString(),
    operation: ssoCallbackContract.operationId,
    target: operatorId === undefined ? {} : { operatorId },
    before: null,
    ...sourceOf(request),
  }
}
