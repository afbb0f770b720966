import { component, messageParser, RULE, UNKNOWN_FIELD_RULE } from '@earshot/protocol'
import Type from 'typebox'
import { Id, NullableTime, Time } from '../http/answer-fields.js'
import { ROLE_NAMES } from './roles.js'

/* What the sign-in, operator and API key routes take and answer. */

const Role = Type.Enum(ROLE_NAMES, {
  description: 'owner, admin, operator or viewer',
  [RULE]: `must be one of ${ROLE_NAMES.join(', ')}`,
})
const Enterprises = Type.Union([Type.Array(Id('an enterprise'), { maxItems: 1000 }), Type.Null()], {
  description: 'the enterprises it is limited to; null: every enterprise',
  [RULE]: 'must be a list of enterprise ids, or null for every enterprise',
})
const Email = Type.String({
  minLength: 3,
  maxLength: 320,
  pattern: '^[^@\\s]+@[^@\\s]+$',
  [RULE]: 'must be an email address',
})
const Name = Type.String({ maxLength: 200, [RULE]: 'must be a string of at most 200 characters' })
const Password = Type.String({ maxLength: 1024, [RULE]: 'must be a string' })

export const SignInSchema = Type.Object(
  { email: Email, password: Password },
  component({ name: 'SignIn', description: "An operator's email and password." }),
)
export const SignIn = messageParser(SignInSchema)

export const SetupSchema = Type.Object(
  {
    token: Type.String({ maxLength: 200, [RULE]: "must be the setup link's token" }),
    email: Type.Optional(Email),
    name: Type.Optional(Name),
    password: Password,
  },
  component({
    name: 'Setup',
    description: "A setup link completed: the operator's password (and, for the first owner, its email).",
  }),
)
export const Setup = messageParser(SetupSchema)

export const SessionSchema = Type.Object(
  {
    actor: Type.Object({
      kind: Type.String({ description: 'operator, key or break-glass' }),
      id: Type.String(),
      name: Type.String(),
    }),
    role: Role,
    enterprises: Enterprises,
    permissions: Type.Array(Type.String(), { description: 'what the role grants' }),
    csrfToken: Type.Optional(
      Type.String({ description: "a console session's: send it as x-csrf-token on every change" }),
    ),
  },
  component({ name: 'Session', description: 'Who is signed in, and what they may do.' }),
)

export const OperatorSchema = Type.Object(
  {
    operatorId: Id('the operator'),
    email: Type.String(),
    name: Type.String(),
    role: Role,
    enterprises: Enterprises,
    enabled: Type.Boolean(),
    setUp: Type.Boolean({
      description: 'whether the operator has a password or has signed in through single sign-on',
    }),
    sso: Type.Boolean({ description: 'whether the operator has signed in through single sign-on' }),
    createdAt: Time('when the operator was added'),
  },
  component({ name: 'Operator', description: 'An operator: a named account with a role.' }),
)

export const NewOperatorSchema = Type.Object(
  { email: Email, name: Type.Optional(Name), role: Role, enterprises: Type.Optional(Enterprises) },
  component({
    name: 'NewOperator',
    description: 'An operator to add; they set up their sign-in from the link.',
  }),
)
export const NewOperator = messageParser(NewOperatorSchema)

export const AddedOperatorSchema = Type.Object({
  operatorId: Id('the operator'),
  setupUrl: Type.String({
    description: 'the one-time link (valid 7 days) where the operator sets a password',
  }),
})

export const OperatorChangesSchema = Type.Object(
  {
    name: Type.Optional(Name),
    role: Type.Optional(Role),
    enterprises: Type.Optional(Enterprises),
    enabled: Type.Optional(Type.Boolean({ [RULE]: 'must be true or false' })),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field of an operator; give name, role, enterprises or enabled',
  },
)
export const OperatorChanges = messageParser(OperatorChangesSchema)

export const ApiKeySchema = Type.Object(
  {
    keyId: Id('the key'),
    name: Type.String(),
    role: Role,
    enterprises: Enterprises,
    createdBy: Type.String({ description: 'the actor who created it' }),
    createdAt: Time('when it was created'),
    expiresAt: NullableTime('when it stops working; null: never'),
    lastUsedAt: NullableTime('when it was last presented (to the minute)'),
    revokedAt: NullableTime('when it was revoked'),
  },
  component({ name: 'ApiKey', description: 'An API key as listed: never the key itself.' }),
)

export const NewApiKeySchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 200,
      [RULE]: 'must be a non-empty string of at most 200 characters',
    }),
    role: Role,
    enterprises: Type.Optional(Enterprises),
    expires: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,4}[dh]$',
        description: 'how long it works: Nd (days) or Nh (hours); absent: until revoked',
        [RULE]: 'must be a number of days or hours, like 90d or 12h',
      }),
    ),
  },
  component({ name: 'NewApiKey', description: 'An API key to create.' }),
)
export const NewApiKeyInput = messageParser(NewApiKeySchema)

export const CreatedApiKeySchema = Type.Object(
  {
    keyId: Id('the key'),
    key: Type.String({ description: 'the key, prefixed esk_: shown this once' }),
    role: Role,
    enterprises: Enterprises,
    expiresAt: NullableTime('when it stops working'),
  },
  component({ name: 'CreatedApiKey', description: 'A new API key: the only time it is shown.' }),
)
