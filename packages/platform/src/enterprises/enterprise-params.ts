import { ResponseCode } from '@earshot/protocol'
import type { FastifyRequest } from 'fastify'
import { idParam } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import type { Queryable } from '../storage/database.js'
import { enterpriseExists } from './enterprise-store.js'

export function noSuchEnterprise(enterpriseId: number): ApiError {
  return new ApiError(ResponseCode.NOT_FOUND, `no enterprise ${enterpriseId}`)
}

/** Refuses with 4040 an enterpriseId no enterprise has. */
export async function requireEnterprise(db: Queryable, enterpriseId: number): Promise<void> {
  if (!(await enterpriseExists(db, enterpriseId))) throw noSuchEnterprise(enterpriseId)
}

/** Refuses with 4040 an enterpriseId no enterprise has, and with 4030 a disabled enterprise's. */
export async function requireEnabledEnterprise(db: Queryable, enterpriseId: number): Promise<void> {
  const [row] = await db.query<{ disabled: boolean }>(
    'SELECT disabled_at IS NOT NULL AS disabled FROM enterprises WHERE enterprise_id = $1',
    [enterpriseId],
  )
  if (!row) throw noSuchEnterprise(enterpriseId)
  if (row.disabled) {
    throw new ApiError(
      ResponseCode.FORBIDDEN,
      `enterprise ${enterpriseId} is disabled: enable it before checking or adding its push endpoints`,
    )
  }
}

/** The enterprise the path's :enterpriseId names: 4001 when it is not an id, 4040 when there is none. */
export async function existingEnterpriseId(db: Queryable, request: FastifyRequest): Promise<number> {
  const enterpriseId = idParam(request, 'enterpriseId')
  await requireEnterprise(db, enterpriseId)
  return enterpriseId
}
