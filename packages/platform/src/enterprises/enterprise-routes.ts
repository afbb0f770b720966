import { ResponseCode } from '@earshot/protocol'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import { checkPushUrl } from '../http/address-policy.js'
import { idParam, jsonObject, WITH_BODY, WITH_ID } from '../http/admin-params.js'
import type { RouteSpec } from '../http/route-spec.js'
import {
  DisabledEnterpriseSchema,
  EnterpriseCredentialsSchema,
  EnterpriseListSchema,
  EnterpriseSummarySchema,
  RotatedKeySchema,
} from './enterprise-answers.js'
import {
  EnterpriseChanges,
  EnterpriseChangesSchema,
  NewEnterprise,
  NewEnterpriseSchema,
} from './enterprise-input.js'
import { EnterpriseParams, noSuchEnterprise } from './enterprise-params.js'
import {
  createEnterprise,
  disableEnterprise,
  listEnterprises,
  rotateKey,
  updateEnterprise,
} from './enterprise-store.js'

/*
 * The operators' enterprises: create one (its first key answered once), list them, change one's settings,
 * disable one, rotate its key. Other instances hear of every change by NOTIFY (credential-cache.ts); this one drops its entries now.
 */

const createEnterpriseRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('createEnterprise'),
  tag: 'enterprises',
  summary: 'Create an enterprise and its first key',
  body: { json: NewEnterpriseSchema },
  answer: {
    status: 201,
    description: 'Created: the secret is shown this once',
    payload: { json: EnterpriseCredentialsSchema },
  },
  refusals: WITH_BODY,
  handle: (context) =>
    async function createEnterpriseHandler(request, reply) {
      const body = NewEnterprise.parse(jsonObject(request.body))
      const pushUrl = await checkPushUrl(
        body.pushUrl,
        context.config.pushAllowPrivate,
        undefined,
        context.config.pushPorts,
      )
      const created = await createEnterprise(context.db, body.name.trim(), pushUrl, context.randomBytes)
      context.credentials.invalidate(created.enterpriseId)
      return reply.code(201).send(created)
    },
}

const listEnterprisesRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('listEnterprises'),
  tag: 'enterprises',
  summary: 'List enterprises with their keys',
  answer: { description: 'Every enterprise, by id', payload: { json: EnterpriseListSchema } },
  refusals: [],
  handle: (context) => async () => ({ enterprises: await listEnterprises(context.db) }),
}

const updateEnterpriseRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('updateEnterprise'),
  tag: 'enterprises',
  summary: "Change an enterprise's settings: whether its requests must carry issuedAt",
  description:
    'Fields left out stay as they are. Takes effect on every instance within 1 s, as disabling does.',
  params: EnterpriseParams,
  body: { json: EnterpriseChangesSchema },
  answer: { description: 'The enterprise as it is now', payload: { json: EnterpriseSummarySchema } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND],
  handle: (context) =>
    async function updateEnterpriseHandler(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const changes = EnterpriseChanges.parse(jsonObject(request.body))
      const updated = await updateEnterprise(context.db, enterpriseId, changes)
      if (!updated) throw noSuchEnterprise(enterpriseId)
      context.credentials.invalidate(enterpriseId)
      return updated
    },
}

const disableEnterpriseRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('disableEnterprise'),
  tag: 'enterprises',
  summary: 'Disable an enterprise: its tokens stop working on every instance within 1 s',
  params: EnterpriseParams,
  answer: { description: 'Disabled', payload: { json: DisabledEnterpriseSchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function disableEnterpriseHandler(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      if (!(await disableEnterprise(context.db, enterpriseId))) throw noSuchEnterprise(enterpriseId)
      context.credentials.invalidate(enterpriseId)
      return { enterpriseId, disabled: true }
    },
}

const rotateKeyRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('rotateKey'),
  tag: 'enterprises',
  summary: 'Issue a new key; the previous one stays valid for EARSHOT_KEY_GRACE (24 h)',
  params: EnterpriseParams,
  answer: { description: 'The new key, shown this once', payload: { json: RotatedKeySchema } },
  refusals: WITH_ID,
  handle: (context) =>
    async function rotateKeyHandler(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const { db, config } = context
      const rotated = await rotateKey(
        db,
        enterpriseId,
        config.keyGraceSeconds,
        context.clock(),
        context.randomBytes,
      )
      if (!rotated) throw noSuchEnterprise(enterpriseId)
      context.credentials.invalidate(enterpriseId)
      return rotated
    },
}

export const enterpriseRoutes = [
  createEnterpriseRoute,
  listEnterprisesRoute,
  updateEnterpriseRoute,
  disableEnterpriseRoute,
  rotateKeyRoute,
]
