import { ResponseCode } from '@earshot/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { appendToChain } from '../audit/audit-chain.js'
import { type Actor, sourceOf } from '../audit/audit-entry.js'
import { appendAudit } from '../audit/audit-trail.js'
import { jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { permissions } from '../http/permissions.js'
import { defineRoute } from '../http/route-spec.js'
import type { Database, Queryable } from '../storage/database.js'
import { completeSetupContract, sessionContract, signInContract, signOutContract } from './access-contract.js'
import { Setup, SignIn } from './access-schemas.js'
import { completeSetup, type SetupRefusal } from './operator-store.js'
import { DECOY_HASH, passwordMatches, passwordProblem } from './passwords.js'
import { maybePrincipalOf, type Principal } from './principal.js'
import { isSecure } from './request-origin.js'
import { allows, type Role } from './roles.js'
import {
  clearedSessionCookie,
  endOperatorSessions,
  endSession,
  sessionCookie,
  startSession,
} from './sessions.js'
import { clearFailures, lockedFor, recordFailure, throttleSubjects } from './sign-in-throttle.js'

/** What the sign-in routes read of the running platform. */
export interface SignInContext {
  db: Database
  clock: () => number
  randomBytes: (size: number) => Buffer
  config: { sessionMaxSeconds: number }
}

const WRONG_CREDENTIALS = 'wrong email or password (or the account is disabled): check both, or ask an owner'

const signInRoute = defineRoute(
  signInContract,
  (context: SignInContext) =>
    async function signInHandler(request, reply) {
      const { email, password } = SignIn.parse(jsonObject(request.body))
      const now = context.clock()
      const subjects = throttleSubjects(email, request.ip)
      const wait = await lockedFor(context.db, subjects, now)
      if (wait > 0) {
        throw new ApiError(
          ResponseCode.RATE_LIMITED,
          `too many failed sign-ins for this account or address: try again in ${wait} s`,
          { 'retry-after': String(wait) },
        )
      }
      const [operator] = await context.db.query<{
        operatorId: number
        name: string
        passwordHash: string | null
      }>(
        `SELECT operator_id AS "operatorId", COALESCE(NULLIF(name, ''), email) AS name, password_hash AS "passwordHash"
         FROM operators WHERE lower(email) = lower($1) AND enabled`,
        [email],
      )
      // An unknown account spends a hash too, so that its answer does not come sooner.
      const matches = await passwordMatches(password, operator?.passwordHash ?? DECOY_HASH)
      const actor: Actor = operator
        ? { kind: 'operator', id: `operator:${operator.operatorId}`, name: operator.name }
        : { kind: 'operator', id: 'unknown', name: email.slice(0, 320) }
      if (!operator?.passwordHash || !matches) {
        await recordFailure(context.db, subjects, now)
        await appendAudit(
          context.db,
          signInRow(request, actor, 'signIn', 'refused', now, operator?.operatorId),
        )
        throw new ApiError(ResponseCode.UNAUTHORIZED, WRONG_CREDENTIALS)
      }
      await clearFailures(context.db, subjects[0] as string)
      return context.db.transaction((tx) =>
        beginSessionIn(tx, context, request, reply, operator.operatorId, actor, 'signIn'),
      )
    },
)

const completeSetupRoute = defineRoute(
  completeSetupContract,
  (context: SignInContext) =>
    async function completeSetupHandler(request, reply) {
      const details = Setup.parse(jsonObject(request.body))
      const problem = passwordProblem(details.password)
      if (problem) throw new ApiError(ResponseCode.INVALID_PARAMETER, `password: ${problem}`)
      const now = context.clock()
      return context.db.transaction(async (tx) => {
        const operatorId = await completeSetup(tx, details.token, details, now)
        if (typeof operatorId !== 'number') throw setupRefused(operatorId)
        const [row] = await tx.query<{ name: string }>(
          `SELECT COALESCE(NULLIF(name, ''), email) AS name FROM operators WHERE operator_id = $1`,
          [operatorId],
        )
        const actor: Actor = { kind: 'operator', id: `operator:${operatorId}`, name: row?.name ?? '' }
        return beginSessionIn(tx, context, request, reply, operatorId, actor, 'completeSetup')
      })
    },
)

const sessionRoute = defineRoute(
  sessionContract,
  () =>
    async function sessionHandler(request) {
      const principal = maybePrincipalOf(request)
      if (!principal)
        throw new ApiError(ResponseCode.UNAUTHORIZED, 'not signed in: sign in, or present an API key')
      return sessionAnswer(principal)
    },
)

const signOutRoute = defineRoute(
  signOutContract,
  (context: SignInContext) =>
    async function signOutHandler(request, reply) {
      const principal = maybePrincipalOf(request)
      reply.header('set-cookie', clearedSessionCookie(isSecure(request)))
      if (!principal?.sessionHash || principal.operatorId === undefined) return { ended: 0 }
      const everywhere = (request.query as { everywhere?: string }).everywhere === 'true'
      if (!everywhere) {
        await endSession(context.db, principal.sessionHash)
        await appendAudit(
          context.db,
          signInRow(request, principal.actor, 'signOut', 'ok', context.clock(), principal.operatorId),
        )
        return { ended: 1 }
      }
      const operatorId = principal.operatorId
      const ended = await context.db.transaction(async (tx) => {
        const count = await endOperatorSessions(tx, operatorId)
        await appendToChain(
          tx,
          signInRow(request, principal.actor, 'signOut', 'ok', context.clock(), operatorId),
        )
        return count
      })
      return { ended }
    },
)

export const sessionRoutes = [signInRoute, completeSetupRoute, sessionRoute, signOutRoute]

async function beginSessionIn(
  tx: Queryable,
  context: SignInContext,
  request: FastifyRequest,
  reply: FastifyReply,
  operatorId: number,
  actor: Actor,
  operation: string,
) {
  const now = context.clock()
  const session = await startSession(tx, operatorId, now, context.randomBytes)
  await appendToChain(tx, signInRow(request, actor, operation, 'ok', now, operatorId))
  const [operator] = await tx.query<{ role: Role; enterprises: number[] | null }>(
    'SELECT role, enterprises FROM operators WHERE operator_id = $1',
    [operatorId],
  )
  reply.header(
    'set-cookie',
    sessionCookie(session.token, isSecure(request), context.config.sessionMaxSeconds),
  )
  return sessionAnswer({
    actor,
    role: operator?.role ?? 'viewer',
    enterprises: operator?.enterprises?.map(Number) ?? null,
    csrfToken: session.csrfToken,
  })
}

/** What the console learns of who is signed in: who, the role, its scope and what it grants. */
export function sessionAnswer(principal: Principal) {
  return {
    actor: principal.actor,
    role: principal.role,
    enterprises: principal.enterprises === null ? null : [...principal.enterprises],
    permissions: Object.keys(permissions).filter((permission) =>
      allows(principal.role, principal.enterprises !== null, permission as keyof typeof permissions),
    ),
    ...(principal.csrfToken && { csrfToken: principal.csrfToken }),
  }
}

function signInRow(
  request: FastifyRequest,
  actor: Actor,
  operation: string,
  outcome: 'ok' | 'refused',
  now: number,
  operatorId: number | undefined,
) {
  return {
    at: new Date(now).toISOString(),
    actor,
    operation,
    target: operatorId === undefined ? {} : { operatorId },
    before: null,
    after: null,
    ...sourceOf(request),
    outcome,
  }
}

const SETUP_REFUSALS: Record<SetupRefusal, [number, string]> = {
  unknown: [
    ResponseCode.NOT_FOUND,
    'no such setup link: check it was copied whole, or ask an owner for a new one',
  ],
  spent: [ResponseCode.NOT_FOUND, 'this setup link was already used: sign in, or ask an owner for a new one'],
  expired: [
    ResponseCode.NOT_FOUND,
    'this setup link has expired: ask an owner for a new one (or restart the platform)',
  ],
  'owner-exists': [
    ResponseCode.NOT_FOUND,
    'an owner is already set up: ask them to add you (earshot operators add)',
  ],
  'email-needed': [ResponseCode.INVALID_PARAMETER, 'email: the first owner needs an email address'],
  'email-taken': [ResponseCode.INVALID_PARAMETER, 'email: an operator with this email exists'],
}

function setupRefused(refusal: SetupRefusal): ApiError {
  const [code, message] = SETUP_REFUSALS[refusal]
  return new ApiError(code as 4040 | 4001, message)
}
