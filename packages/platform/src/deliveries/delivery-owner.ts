import { ResponseCode } from '@earshot/protocol'
import { ApiError } from '../http/api-error.js'
import type { Queryable } from '../storage/database.js'

/** The enterprise a delivery belongs to, or undefined when there is no such delivery. */
export async function deliveryEnterprise(db: Queryable, deliveryId: number): Promise<number | undefined> {
  const [row] = await db.query<{ enterpriseId: number }>(
    'SELECT enterprise_id AS "enterpriseId" FROM deliveries WHERE delivery_id = $1',
    [deliveryId],
  )
  return row?.enterpriseId
}

export function noSuchDelivery(deliveryId: number): ApiError {
  return new ApiError(ResponseCode.NOT_FOUND, `no delivery ${deliveryId}`)
}
