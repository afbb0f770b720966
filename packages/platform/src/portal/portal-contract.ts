import {
  PORTAL_ACCESS,
  ResponseCode,
  type ResponseCodeValue,
  type RouteContract,
  routeContract,
} from '@earshot/protocol'
import Type, { type TObject } from 'typebox'

/*
 * The partner portal's routes on the partner listener: entering by a one-time link, the session, signing out,
 * and each self-service action in the clear for the browser, under /portal/api. A session is the cookie
 * earshot_portal (Path=/portal); every POST carries the session's CSRF token as x-csrf-token.
 */

/** Where the portal's page is served; entering redirects there. */
export const PORTAL_PATH = '/portal/'
/** The session cookie, scoped to the portal's paths. */
export const PORTAL_COOKIE = 'earshot_portal'

const { INVALID_PARAMETER, INVALID_REQUEST, UNAUTHORIZED, FORBIDDEN, FORBIDDEN_BY_ROLE, RATE_LIMITED } =
  ResponseCode
const { PAYLOAD_TOO_LARGE, REQUEST_TIMEOUT, UNSUPPORTED_MEDIA_TYPE, INTERNAL_ERROR, UNAVAILABLE } =
  ResponseCode

/** What any request of a session may be refused with: no session (4010), its enterprise disabled (4030). */
const SESSION_REFUSALS: readonly ResponseCodeValue[] = [UNAUTHORIZED, FORBIDDEN, INTERNAL_ERROR, UNAVAILABLE]
/** And a POST: its body, its CSRF token (4010), the enterprise's rate limit. */
const POST_REFUSALS: readonly ResponseCodeValue[] = [
  ...SESSION_REFUSALS,
  INVALID_REQUEST,
  INVALID_PARAMETER,
  REQUEST_TIMEOUT,
  PAYLOAD_TOO_LARGE,
  UNSUPPORTED_MEDIA_TYPE,
  RATE_LIMITED,
]
/** The sealed route's refusals that a session cannot meet: those of the token and the envelope. */
const BEARER_ONLY = new Set<ResponseCodeValue>([
  ResponseCode.TOKEN_EXPIRED,
  ResponseCode.DECRYPTION_FAILED,
  ResponseCode.REPLAYED,
])

const SESSION_DESCRIPTION =
  'Needs the portal session cookie earshot_portal (set by GET /portal/enter/{link}); without one, or with one ended or expired, 4010.'

export const enterPortalContract = routeContract({
  method: 'GET',
  path: '/portal/enter/:link',
  operationId: 'enterPortal',
  tag: 'portal',
  summary: 'Enter the portal with a one-time link: sets the session cookie and redirects to /portal/',
  description:
    'A browser opens the link an operator or the partner API minted. The first GET spends it: it opens a session for the enterprise (EARSHOT_PORTAL_SESSION_TTL), sets the cookie earshot_portal (HttpOnly; SameSite=Lax; Path=/portal; Secure when EARSHOT_PUBLIC_URL is https) and redirects (303) to /portal/. A link spent, expired or unknown, or of a disabled enterprise, answers 403 with a page saying how to get a new one. A HEAD (a link preview looking first) spends nothing: it answers 200 without a body, whatever the link.',
  open: true,
  head: true,
  params: Type.Object({ link: Type.String({ description: 'the secret part of the link (ptl_…)' }) }),
  answer: { status: 303, description: 'Entered: redirected to /portal/ with the session cookie set' },
  otherAnswers: {
    '200': { description: 'A HEAD: nothing spent, nothing said of the link' },
    '403': {
      description: 'The link was spent, has expired, or is unknown: a page saying how to get a new one',
      payload: { text: 'text/html; charset=utf-8' },
    },
  },
  refusals: [],
})

const PortalSessionSchema = Type.Object({
  sessionId: Type.Integer({ minimum: 1 }),
  enterpriseId: Type.Integer({ minimum: 1 }),
  enterpriseName: Type.String(),
  retentionDays: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
    description:
      "the enterprise's retention policy: its recordings are erased (pushed as recording.deleted) this many days after their recordedAt; null: none",
  }),
  access: Type.Enum(PORTAL_ACCESS, { description: 'view reads only; manage may change too' }),
  operatorView: Type.Boolean({ description: "an operator's read-only look at what the partner sees" }),
  expiresAt: Type.String({ description: 'ISO-8601 UTC with milliseconds' }),
  csrfToken: Type.String({ description: 'send it as x-csrf-token with every POST of this session' }),
})

export const portalSessionContract = routeContract({
  method: 'GET',
  path: '/portal/api/session',
  operationId: 'portalSession',
  tag: 'portal',
  summary: 'The portal session: its enterprise, access and CSRF token',
  description: SESSION_DESCRIPTION,
  answer: { description: 'The session', payload: { json: PortalSessionSchema } },
  refusals: SESSION_REFUSALS,
})

export const portalSignOutContract = routeContract({
  method: 'POST',
  path: '/portal/api/sign-out',
  operationId: 'portalSignOut',
  tag: 'portal',
  summary: 'End the portal session and clear its cookie',
  description: `${SESSION_DESCRIPTION} The body is \`{}\`; x-csrf-token is needed.`,
  body: { json: Type.Object({}, { additionalProperties: true }) },
  answer: {
    description: 'Signed out',
    payload: { json: Type.Object({ signedOut: Type.Literal(true) }) },
  },
  refusals: POST_REFUSALS,
})

/**
 * A self-service action as the portal serves it: POST /portal/api/<action> with the sealed route's
 * plaintext as plain JSON (issuedAt not needed), answered with its data as plain JSON.
 */
export function portalActionContract(sealed: RouteContract, access: 'view' | 'manage'): RouteContract {
  const action = sealed.path.replace(/^\/openapi\/v1\//, '')
  const request = (sealed.body as { sealed: TObject }).sealed
  const result = (sealed.answer.payload as unknown as { result: TObject }).result
  const { issuedAt: _issuedAt, ...fields } = request.properties
  const refusals = sealed.refusals.filter((code) => !BEARER_ONLY.has(code))
  return routeContract({
    method: 'POST',
    path: `/portal/api/${action}`,
    operationId: `portal${sealed.operationId.charAt(0).toUpperCase()}${sealed.operationId.slice(1)}`,
    tag: 'portal',
    summary: `${sealed.summary} (portal)`,
    description: `${SESSION_DESCRIPTION} The portal's form of POST ${sealed.path}: its plaintext as the JSON body, its data as the answer, both in the clear; x-csrf-token is needed. ${
      access === 'view'
        ? 'Any session may call it.'
        : "A manage session only: a view session or an operator's view gets 4031."
    }`,
    body: { json: Type.Object(fields, { additionalProperties: false }) },
    answer: {
      description: sealed.answer.description,
      payload: { json: Type.Object(result.properties) },
    },
    refusals: [
      ...new Set([...POST_REFUSALS, ...refusals, ...(access === 'manage' ? [FORBIDDEN_BY_ROLE] : [])]),
    ],
  })
}
