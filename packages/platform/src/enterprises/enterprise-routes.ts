import { scopeOf, seen } from '../access/principal.js'
import type { CredentialCache } from '../auth/credential-cache.js'
import type { PlatformConfig } from '../config/config.js'
import { checkPushUrl } from '../http/address-policy.js'
import { idParam, jsonObject } from '../http/admin-params.js'
import { defineRoute } from '../http/route-spec.js'
import type { Database } from '../storage/database.js'
import {
  createEnterpriseContract,
  disableEnterpriseContract,
  listEnterprisesContract,
  rotateKeyContract,
  updateEnterpriseContract,
} from './enterprise-contract.js'
import { EnterpriseChanges, NewEnterprise } from './enterprise-input.js'
import { noSuchEnterprise } from './enterprise-params.js'
import {
  createEnterprise,
  disableEnterprise,
  type FirstEndpoint,
  listEnterprises,
  type RotatedKey,
  rotateKey,
  updateEnterprise,
} from './enterprise-store.js'

/** What the enterprises' routes read of the running platform. */
interface EnterprisesContext {
  config: PlatformConfig
  db: Database
  credentials: CredentialCache
  clock: () => number
  randomBytes: (size: number) => Buffer
  /** Adds the endpoint of a push URL given at creation (the endpoints slice's). */
  firstEndpoint: FirstEndpoint
  /** Told when a retention policy changed, so that it is applied now. */
  erasures: { wake(): void }
}

/*
 * Other instances hear of every change to an enterprise by NOTIFY (credential-cache.ts); this one drops its
 * entries now.
 */

const createEnterpriseRoute = defineRoute(
  createEnterpriseContract,
  (context: EnterprisesContext) =>
    async function createEnterpriseHandler(request) {
      const body = NewEnterprise.parse(jsonObject(request.body))
      const pushUrl = await checkPushUrl(
        body.pushUrl,
        context.config.pushAllowPrivate,
        undefined,
        context.config.pushPorts,
      )
      const first = pushUrl === null ? null : { pushUrl, addEndpoint: context.firstEndpoint }
      const created = await createEnterprise(context.db, body.name.trim(), first, context.randomBytes)
      context.credentials.invalidate(created.enterpriseId)
      return created
    },
)

const listEnterprisesRoute = defineRoute(
  listEnterprisesContract,
  (context: EnterprisesContext) => async (request) => ({
    enterprises: seen(await listEnterprises(context.db), scopeOf(request)),
  }),
)

const updateEnterpriseRoute = defineRoute(
  updateEnterpriseContract,
  (context: EnterprisesContext) =>
    async function updateEnterpriseHandler(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      const changes = EnterpriseChanges.parse(jsonObject(request.body))
      const updated = await updateEnterprise(context.db, enterpriseId, changes)
      if (!updated) throw noSuchEnterprise(enterpriseId)
      context.credentials.invalidate(enterpriseId)
      if (changes.retentionDays !== undefined) context.erasures.wake()
      return updated
    },
)

const disableEnterpriseRoute = defineRoute(
  disableEnterpriseContract,
  (context: EnterprisesContext) =>
    async function disableEnterpriseHandler(request) {
      const enterpriseId = idParam(request, 'enterpriseId')
      if (!(await disableEnterprise(context.db, enterpriseId))) throw noSuchEnterprise(enterpriseId)
      context.credentials.invalidate(enterpriseId)
      return { enterpriseId, disabled: true as const }
    },
)

const rotateKeyRoute = defineRoute(
  rotateKeyContract,
  (context: EnterprisesContext) =>
    async function rotateKeyHandler(request) {
      return rotateEnterpriseKey(context, idParam(request, 'enterpriseId'))
    },
)

/** Issues the enterprise's next key, the previous one valid for the grace (EARSHOT_KEY_GRACE); 4040 for none such. */
export async function rotateEnterpriseKey(
  context: Omit<EnterprisesContext, 'firstEndpoint'>,
  enterpriseId: number,
): Promise<RotatedKey> {
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
}

export const enterpriseRoutes = [
  createEnterpriseRoute,
  listEnterprisesRoute,
  updateEnterpriseRoute,
  disableEnterpriseRoute,
  rotateKeyRoute,
]
