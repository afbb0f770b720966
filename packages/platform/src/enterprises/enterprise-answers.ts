import { component } from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { type Holds, Id, NullableTime, type Same, Time } from '../http/answer-fields.js'
import type { EnterpriseCredentials, EnterpriseSummary, RotatedKey } from './enterprise-store.js'

/* What the enterprise routes answer; each schema is checked against the store's type when this compiles. */

export const DisabledEnterpriseSchema = Type.Object({
  enterpriseId: Id('the enterprise'),
  disabled: Type.Literal(true),
})

export const EnterpriseCredentialsSchema = Type.Object(
  {
    enterpriseId: Id('the enterprise'),
    keyVersion: Type.Integer({ minimum: 1, description: 'the version of this key' }),
    secret: Type.String({
      description: 'standard Base64 of 32 random bytes (44 characters): shown once, keep it safe',
    }),
  },
  component({ name: 'EnterpriseCredentials', description: 'A new key: the only time its secret is shown.' }),
)

export const RotatedKeySchema = Type.Object(
  {
    ...EnterpriseCredentialsSchema.properties,
    previousKeyVersion: Type.Integer({ minimum: 1 }),
    previousKeyRetiresAt: Time('when the previous key stops being accepted (EARSHOT_KEY_GRACE from now)'),
  },
  component({
    name: 'RotatedKey',
    description: 'A rotation: the new key, and until when the previous one is accepted.',
  }),
)

export const EnterpriseSummarySchema = Type.Object(
  {
    enterpriseId: Id('the enterprise'),
    name: Type.String(),
    pushUrl: Type.Union([Type.String(), Type.Null()]),
    disabled: Type.Boolean(),
    requireIssuedAt: Type.Boolean({
      description: 'its sealed requests must carry issuedAt; without it they are refused with 4001',
    }),
    retentionDays: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], {
      description:
        'its recordings are erased this many days after their recordedAt; null: kept until deleted',
    }),
    createdAt: Time('when it was created'),
    keys: Type.Array(
      Type.Object({
        keyVersion: Type.Integer({ minimum: 1 }),
        createdAt: Time('when the key was issued'),
        retiresAt: NullableTime('when the key stops being accepted; null for the current key'),
      }),
    ),
  },
  component({ name: 'EnterpriseSummary' }),
)

export const EnterpriseListSchema = Type.Object({ enterprises: Type.Array(EnterpriseSummarySchema) })

/** Compiles only while each schema describes exactly the type its route answers with. */
export type SchemasDescribeTheirTypes = [
  Holds<Same<Static<typeof EnterpriseCredentialsSchema>, EnterpriseCredentials>>,
  Holds<Same<Static<typeof RotatedKeySchema>, RotatedKey>>,
  Holds<Same<Static<typeof EnterpriseSummarySchema>, EnterpriseSummary>>,
]
