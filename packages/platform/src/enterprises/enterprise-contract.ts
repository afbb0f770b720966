import { ResponseCode, routeContract } from '@earshot/protocol'
import Type from 'typebox'
import { WITH_BODY, WITH_ID } from '../http/admin-refusals.js'
import {
  DisabledEnterpriseSchema,
  EnterpriseCredentialsSchema,
  EnterpriseListSchema,
  EnterpriseSummarySchema,
  RotatedKeySchema,
} from './enterprise-answers.js'
import { EnterpriseChangesSchema, NewEnterpriseSchema } from './enterprise-input.js'

/* The operators' enterprises: create one (its first key answered once), list them, change one, disable one, rotate its key. */

/** A path naming an enterprise. */
export const EnterpriseParams = Type.Object({
  enterpriseId: Type.Integer({ minimum: 1, description: 'the enterprise' }),
})

export const createEnterpriseContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises',
  operationId: 'createEnterprise',
  tag: 'enterprises',
  summary: 'Create an enterprise and its first key',
  body: { json: NewEnterpriseSchema },
  answer: {
    status: 201,
    description: 'Created: the secret is shown this once',
    payload: { json: EnterpriseCredentialsSchema },
  },
  refusals: WITH_BODY,
  permission: 'enterprises.create',
})

export const listEnterprisesContract = routeContract({
  method: 'GET',
  path: '/admin/v1/enterprises',
  operationId: 'listEnterprises',
  tag: 'enterprises',
  summary: 'List enterprises with their keys',
  answer: { description: 'Every enterprise, by id', payload: { json: EnterpriseListSchema } },
  refusals: [],
  permission: 'enterprises.read',
})

export const updateEnterpriseContract = routeContract({
  method: 'PATCH',
  path: '/admin/v1/enterprises/:enterpriseId',
  operationId: 'updateEnterprise',
  tag: 'enterprises',
  summary: "Change an enterprise's settings: whether its requests must carry issuedAt",
  description:
    'Fields left out stay as they are. Takes effect on every instance within 1 s, as disabling does.',
  params: EnterpriseParams,
  body: { json: EnterpriseChangesSchema },
  answer: { description: 'The enterprise as it is now', payload: { json: EnterpriseSummarySchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  permission: 'enterprises.write',
})

export const disableEnterpriseContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/disable',
  operationId: 'disableEnterprise',
  tag: 'enterprises',
  summary: 'Disable an enterprise: its tokens stop working on every instance within 1 s',
  params: EnterpriseParams,
  answer: { description: 'Disabled', payload: { json: DisabledEnterpriseSchema } },
  refusals: WITH_ID,
  permission: 'enterprises.write',
})

export const rotateKeyContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/rotate-key',
  operationId: 'rotateKey',
  tag: 'enterprises',
  summary: 'Issue a new key; the previous one stays valid for EARSHOT_KEY_GRACE (24 h)',
  params: EnterpriseParams,
  answer: { description: 'The new key, shown this once', payload: { json: RotatedKeySchema } },
  refusals: WITH_ID,
  permission: 'secrets.read',
})

export const enterpriseContracts = [
  createEnterpriseContract,
  listEnterprisesContract,
  updateEnterpriseContract,
  disableEnterpriseContract,
  rotateKeyContract,
] as const
