import { component, ResponseCode, routeContract } from '@earshot/protocol'
import Type from 'typebox'

/* Single sign-on to the console through an OpenID Connect provider: where it begins and where it returns. */

const { NOT_FOUND } = ResponseCode

const SsoSchema = Type.Object(
  {
    enabled: Type.Boolean({ description: 'whether the console offers single sign-on' }),
    issuer: Type.Optional(Type.String({ description: "the provider's issuer URL, when enabled" })),
  },
  component({
    name: 'SingleSignOn',
    description: 'Whether single sign-on is configured, and with which provider.',
  }),
)

const text = (description: string) => Type.Optional(Type.String({ description }))

export const ssoContract = routeContract({
  method: 'GET',
  path: '/admin/v1/sso',
  operationId: 'sso',
  tag: 'access',
  summary: 'Whether the console offers single sign-on (EARSHOT_OIDC_ISSUER set), and its provider',
  open: true,
  answer: { description: 'Single sign-on', payload: { json: SsoSchema } },
  refusals: [],
})

export const ssoStartContract = routeContract({
  method: 'GET',
  path: '/admin/v1/sso/start',
  operationId: 'ssoStart',
  tag: 'access',
  summary: "Begin single sign-on: a redirect to the provider's sign-in",
  description:
    'A browser navigates here. It is redirected (302) to the OpenID Connect provider with an authorization code request (PKCE S256, state and nonce); the state is kept by the platform for 10 minutes, for one use, and bound to the browser by an HttpOnly SameSite=Lax cookie. When the provider cannot be reached, the redirect goes to /console/#sso-error=<message>. 4040 when single sign-on is not configured.',
  open: true,
  answer: {
    status: 302,
    description: "Redirected to the provider's sign-in (or to the console with an error)",
  },
  refusals: [NOT_FOUND],
})

export const ssoCallbackContract = routeContract({
  method: 'GET',
  path: '/admin/v1/sso/callback',
  operationId: 'ssoCallback',
  tag: 'access',
  summary: 'Where the provider returns: signs the operator in and redirects to the console',
  description:
    "Register <admin URL>/admin/v1/sso/callback as the client's redirect URI. The state must be the one this browser began with, unused and at most 10 minutes old; the code is exchanged with the PKCE verifier, and the ID token's signature, issuer, audience and nonce are checked. The operator signed in is the one this provider account signed in as before, else an enabled operator an owner added with the account's verified email, else (with EARSHOT_OIDC_ROLE_CLAIM) a new operator with the role the claim names. Signed in, the session cookie is set and the browser is redirected (302) to /console/; refused, to /console/#sso-error=<message>. Either way the audit trail gets a row.",
  open: true,
  query: Type.Object({
    code: text('the authorization code'),
    state: text('the state the sign-in began with'),
    iss: text("the provider's issuer (RFC 9207)"),
    error: text("the provider's refusal, instead of a code"),
    error_description: text("the provider's explanation of its refusal"),
  }),
  answer: { status: 302, description: 'Redirected to the console: signed in, or with #sso-error=<message>' },
  refusals: [NOT_FOUND],
})

export const ssoContracts = [ssoContract, ssoStartContract, ssoCallbackContract] as const
