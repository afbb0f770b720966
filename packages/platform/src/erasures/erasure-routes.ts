import { InvalidParameterError, ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { principalOf, scopeOf } from '../access/principal.js'
import type { PlatformContext } from '../context/platform-context.js'
import { existingEnterpriseId } from '../enterprises/enterprise-params.js'
import { ID_RULE, idParam, jsonObject, positiveInteger } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import {
  createErasureContract,
  erasureKeyContract,
  erasureReportContract,
  listErasuresContract,
  NewErasure,
  showErasureContract,
} from './erasure-contract.js'
import { erasureReport } from './erasure-report.js'
import { createErasure, listErasures, showErasure } from './erasure-store.js'

/* The operators' erasures, and the public key that verifies their reports (on the partner listener). */

const createErasureRoute = defineRoute(
  createErasureContract,
  (context: PlatformContext) =>
    async function createErasureHandler(request) {
      const enterpriseId = await existingEnterpriseId(context.db, request)
      const { deviceUid, audioIds, reason = '' } = NewErasure.parse(jsonObject(request.body))
      const created = await createErasure(context.db, {
        enterpriseId,
        subject: deviceUid === undefined ? { audioIds: audioIds as string[] } : { deviceUid },
        reason,
        requestedBy: principalOf(request).actor,
      })
      context.erasures.wake()
      return created
    },
)

const listErasuresRoute = defineRoute(
  listErasuresContract,
  (context: PlatformContext) =>
    async function listErasuresHandler(request) {
      const given = (request.query as { enterpriseId?: string }).enterpriseId
      const enterpriseId = positiveInteger(given)
      if (given !== undefined && enterpriseId === undefined)
        throw new InvalidParameterError('enterpriseId', ID_RULE)
      return { erasures: await listErasures(context.db, { enterpriseId, scope: scopeOf(request) }) }
    },
)

const showErasureRoute = defineRoute(
  showErasureContract,
  (context: PlatformContext) =>
    async function showErasureHandler(request) {
      return (await showErasure(context.db, erasureIdOf(request), scopeOf(request))) ?? noSuchErasure(request)
    },
)

const erasureReportRoute = defineRoute(
  erasureReportContract,
  (context: PlatformContext) =>
    async function erasureReportHandler(request) {
      const report = await erasureReport(context.db, erasureIdOf(request), {
        scope: scopeOf(request),
        key: context.erasures.key,
        nowMs: context.clock(),
      })
      return report ?? noSuchErasure(request)
    },
)

function erasureIdOf(request: FastifyRequest): number {
  return idParam(request, 'erasureId')
}

function noSuchErasure(request: FastifyRequest): never {
  throw new ApiError(
    ResponseCode.NOT_FOUND,
    `no erasure ${erasureIdOf(request)}; \`earshot erasure list\` lists them`,
  )
}

export const erasureAdminRoutes = [
  createErasureRoute,
  listErasuresRoute,
  showErasureRoute,
  erasureReportRoute,
]

/** GET /.well-known/earshot-erasure-key on the partner listener. */
export const erasureKeyRoute = defineRoute(
  erasureKeyContract,
  ({ context }: { context: PlatformContext }) =>
    async function erasureKey() {
      return context.erasures.key.jwk
    },
)
