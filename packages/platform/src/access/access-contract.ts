import { ResponseCode, routeContract } from '@earshot/protocol'
import Type from 'typebox'
import { WITH_BODY, WITH_ID } from '../http/admin-refusals.js'
import {
  AddedOperatorSchema,
  ApiKeySchema,
  CreatedApiKeySchema,
  NewApiKeySchema,
  NewOperatorSchema,
  OperatorChangesSchema,
  OperatorSchema,
  SessionSchema,
  SetupSchema,
  SignInSchema,
} from './access-schemas.js'

/* Signing in to the console, the operators' accounts, and API keys. */

const { RATE_LIMITED, NOT_FOUND } = ResponseCode
const Ended = Type.Object({ ended: Type.Integer({ minimum: 0, description: 'sessions ended' }) })

export const signInContract = routeContract({
  method: 'POST',
  path: '/admin/v1/sign-in',
  operationId: 'signIn',
  tag: 'access',
  summary: 'Sign in to the console with an email and password',
  description:
    'Sets the session cookie (HttpOnly, SameSite=Strict, Secure behind TLS) and answers the CSRF token every change must carry as x-csrf-token. Wrong credentials answer 4010; after repeated failures, an account or address waits (4290 with Retry-After).',
  open: true,
  body: { json: SignInSchema },
  answer: { description: 'Signed in', payload: { json: SessionSchema } },
  refusals: [...WITH_BODY, RATE_LIMITED],
})

export const completeSetupContract = routeContract({
  method: 'POST',
  path: '/admin/v1/setup',
  operationId: 'completeSetup',
  tag: 'access',
  summary: "Complete a setup link: set the operator's password (the first owner's link creates the owner)",
  open: true,
  body: { json: SetupSchema },
  answer: { description: 'Set up and signed in', payload: { json: SessionSchema } },
  refusals: [...WITH_BODY, NOT_FOUND],
})

export const sessionContract = routeContract({
  method: 'GET',
  path: '/admin/v1/session',
  operationId: 'session',
  tag: 'access',
  summary:
    'Who is signed in (a session, an API key or the break-glass key), with the permissions of its role',
  open: true,
  answer: { description: 'The caller', payload: { json: SessionSchema } },
  refusals: [],
})

export const signOutContract = routeContract({
  method: 'POST',
  path: '/admin/v1/sign-out',
  operationId: 'signOut',
  tag: 'access',
  summary: "End this console session (everywhere: true ends every session of the operator's)",
  open: true,
  query: Type.Object({
    everywhere: Type.Optional(
      Type.Boolean({ description: "end every session of the operator's, on every instance" }),
    ),
  }),
  answer: { description: 'Signed out', payload: { json: Ended } },
  refusals: [],
})

export const listOperatorsContract = routeContract({
  method: 'GET',
  path: '/admin/v1/operators',
  operationId: 'listOperators',
  tag: 'access',
  summary: 'List operators',
  answer: {
    description: 'Every operator',
    payload: { json: Type.Object({ operators: Type.Array(OperatorSchema) }) },
  },
  refusals: [],
  permission: 'operators.manage',
})

export const addOperatorContract = routeContract({
  method: 'POST',
  path: '/admin/v1/operators',
  operationId: 'addOperator',
  tag: 'access',
  summary: 'Add an operator; the answer holds their one-time setup link',
  body: { json: NewOperatorSchema },
  answer: { status: 201, description: 'Added', payload: { json: AddedOperatorSchema } },
  refusals: WITH_BODY,
  permission: 'operators.manage',
})

const OperatorParams = Type.Object({ operatorId: Type.Integer({ minimum: 1, description: 'the operator' }) })

export const updateOperatorContract = routeContract({
  method: 'PATCH',
  path: '/admin/v1/operators/:operatorId',
  operationId: 'updateOperator',
  tag: 'access',
  summary: "Change an operator's name, role, enterprises or enabled; disabling ends their sessions at once",
  params: OperatorParams,
  body: { json: OperatorChangesSchema },
  answer: { description: 'The operator as it is now', payload: { json: OperatorSchema } },
  refusals: [...WITH_BODY, NOT_FOUND],
  permission: 'operators.manage',
})

export const endOperatorSessionsContract = routeContract({
  method: 'POST',
  path: '/admin/v1/operators/:operatorId/sign-out',
  operationId: 'endOperatorSessions',
  tag: 'access',
  summary: "End every session of an operator's, on every instance",
  params: OperatorParams,
  answer: { description: 'Ended', payload: { json: Ended } },
  refusals: WITH_ID,
  permission: 'operators.manage',
})

export const listKeysContract = routeContract({
  method: 'GET',
  path: '/admin/v1/keys',
  operationId: 'listKeys',
  tag: 'access',
  summary: 'List API keys (never the keys themselves), with when each was last used',
  answer: { description: 'Every key', payload: { json: Type.Object({ keys: Type.Array(ApiKeySchema) }) } },
  refusals: [],
  permission: 'keys.manage',
})

export const createKeyContract = routeContract({
  method: 'POST',
  path: '/admin/v1/keys',
  operationId: 'createKey',
  tag: 'access',
  summary: 'Create an API key (prefix esk_), shown this once',
  body: { json: NewApiKeySchema },
  answer: { status: 201, description: 'Created', payload: { json: CreatedApiKeySchema } },
  refusals: WITH_BODY,
  permission: 'keys.manage',
})

export const revokeKeyContract = routeContract({
  method: 'POST',
  path: '/admin/v1/keys/:keyId/revoke',
  operationId: 'revokeKey',
  tag: 'access',
  summary: 'Revoke an API key: refused from its next request on, on every instance',
  params: Type.Object({ keyId: Type.Integer({ minimum: 1, description: 'the key' }) }),
  answer: { description: 'Revoked', payload: { json: ApiKeySchema } },
  refusals: WITH_ID,
  permission: 'keys.manage',
})
