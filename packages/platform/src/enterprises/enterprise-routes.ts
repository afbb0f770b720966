import type { FastifyInstance } from 'fastify'
import type { PlatformContext } from '../context.js'
import { checkPushUrl } from '../http/address-policy.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { NewEnterprise } from './enterprise-input.js'
import { noSuchEnterprise } from './enterprise-params.js'
import { createEnterprise, disableEnterprise, listEnterprises, rotateKey } from './enterprise-store.js'

/**
 * The operators' enterprises: create one (its first key answered once), list them, disable one, rotate its
 * key. Other instances hear of every change by NOTIFY (credential-cache.ts); this one drops its entries now.
 */
export function enterpriseRoutes(app: FastifyInstance, context: PlatformContext, prefix: string): void {
  const { db, config } = context

  app.post(`${prefix}/enterprises`, async (request, reply) => {
    const body = NewEnterprise.parse(jsonObject(request.body))
    const pushUrl = await checkPushUrl(body.pushUrl, config.pushAllowPrivate)
    const created = await createEnterprise(db, body.name.trim(), pushUrl, context.randomBytes)
    context.credentials.invalidate(created.enterpriseId)
    return reply.code(201).send(created)
  })

  app.get(`${prefix}/enterprises`, async () => ({ enterprises: await listEnterprises(db) }))

  app.post(`${prefix}/enterprises/:enterpriseId/disable`, async (request) => {
    const enterpriseId = idParam(request, 'enterpriseId')
    if (!(await disableEnterprise(db, enterpriseId))) throw noSuchEnterprise(enterpriseId)
    context.credentials.invalidate(enterpriseId)
    return { enterpriseId, disabled: true }
  })

  app.post(`${prefix}/enterprises/:enterpriseId/rotate-key`, async (request) => {
    const enterpriseId = idParam(request, 'enterpriseId')
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
  })
}
