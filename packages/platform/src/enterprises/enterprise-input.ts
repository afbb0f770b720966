import { component, InvalidParameterError, messageParser, RULE, UNKNOWN_FIELD_RULE } from '@earshot/protocol'
import Type from 'typebox'

export const MAX_NAME_LENGTH = 200
const MAX_PUSH_URL_LENGTH = 2048

/**
 * A push URL as a body gives it; address-policy.ts's checkPushUrl then judges where it leads (scheme,
 * credentials, the addresses it resolves to). Absent or null: no push URL.
 */
const PushUrl = Type.Optional(
  Type.Union([Type.String({ maxLength: MAX_PUSH_URL_LENGTH }), Type.Null()], {
    description:
      "where the platform pushes the enterprise's events: an absolute http(s) URL without credentials that resolves to public addresses (loopback and private ones too with EARSHOT_PUSH_ALLOW_PRIVATE=1), or null for none",
    [RULE]: `must be an absolute http:// or https:// URL of at most ${MAX_PUSH_URL_LENGTH} characters, or null`,
  }),
)

/** An operator's new enterprise; the name is stored trimmed. Other fields are ignored. */
export const NewEnterpriseSchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: MAX_NAME_LENGTH,
      // Something besides white space, and no U+0000 anywhere.
      pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$',
      description: "the enterprise's name, for operators",
      [RULE]: `must be a non-empty string of at most ${MAX_NAME_LENGTH} characters, without U+0000`,
    }),
    pushUrl: PushUrl,
  },
  component({ name: 'NewEnterprise', description: 'A new enterprise; fields other than these are ignored.' }),
)
export const NewEnterprise = messageParser(NewEnterpriseSchema)

/** A push URL set or cleared; other fields are ignored. */
export const PushUrlChangeSchema = Type.Object(
  { pushUrl: PushUrl },
  component({ name: 'PushUrlChange', description: 'Sets (a URL) or clears (null or absent) the push URL.' }),
)
export const PushUrlChange = messageParser(PushUrlChangeSchema)

/** An operator's changes to an enterprise; a field left out stays as it is, at least one is given. */
export const EnterpriseChangesSchema = Type.Object(
  {
    requireIssuedAt: Type.Optional(
      Type.Boolean({
        description:
          'true: every sealed request of the enterprise (the token request too) must carry issuedAt, else 4001',
        [RULE]: 'must be true or false',
      }),
    ),
    retentionDays: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 36500,
        description:
          'recordings whose recordedAt is older than this many days are erased by the platform (pushed as deleted to every endpoint); 0 removes the policy',
        [RULE]: 'must be a whole number of days from 0 (no policy) to 36500',
      }),
    ),
  },
  {
    additionalProperties: false,
    [UNKNOWN_FIELD_RULE]: 'is not a field an update changes; give requireIssuedAt or retentionDays',
  },
)
export const EnterpriseChanges = messageParser(EnterpriseChangesSchema, (changes) => {
  if (changes.requireIssuedAt === undefined && changes.retentionDays === undefined) {
    throw new InvalidParameterError('', 'give at least one change: requireIssuedAt or retentionDays')
  }
})
