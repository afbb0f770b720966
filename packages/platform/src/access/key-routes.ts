import { ResponseCode } from '@earshot/protocol'
import { idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import type { Database } from '../storage/database.js'
import { createKeyContract, listKeysContract, revokeKeyContract } from './access-contract.js'
import { NewApiKeyInput } from './access-schemas.js'
import { createApiKey, listApiKeys, revokeApiKey } from './api-keys.js'
import { principalOf } from './principal.js'

/** What the API key routes read of the running platform. */
interface KeysContext {
  db: Database
  clock: () => number
  randomBytes: (size: number) => Buffer
}

const listKeysRoute = defineRoute(listKeysContract, (context: KeysContext) => async () => ({
  keys: await listApiKeys(context.db),
}))

const createKeyRoute = defineRoute(
  createKeyContract,
  (context: KeysContext) =>
    async function createKeyHandler(request) {
      const body = NewApiKeyInput.parse(jsonObject(request.body))
      const enterprises = body.enterprises ?? null
      if (enterprises) await requireEnterprises(context.db, enterprises)
      return createApiKey(
        context.db,
        {
          name: body.name,
          role: body.role,
          enterprises,
          expiresAt: body.expires === undefined ? null : expiryOf(body.expires, context.clock()),
          createdBy: principalOf(request).actor.id,
        },
        context.randomBytes,
      )
    },
)

const revokeKeyRoute = defineRoute(
  revokeKeyContract,
  (context: KeysContext) =>
    async function revokeKeyHandler(request) {
      const keyId = idParam(request, 'keyId')
      const revoked = await revokeApiKey(context.db, keyId)
      if (!revoked) throw new ApiError(ResponseCode.NOT_FOUND, `no API key ${keyId}`)
      return revoked
    },
)

export const keyRoutes = [listKeysRoute, createKeyRoute, revokeKeyRoute]

/** `90d` or `12h` from now, as an ISO time. */
export function expiryOf(expires: string, now: number): string {
  const amount = Number(expires.slice(0, -1))
  const hours = expires.endsWith('d') ? amount * 24 : amount
  return new Date(now + hours * 3_600_000).toISOString()
}

async function requireEnterprises(db: Database, enterprises: readonly number[]): Promise<void> {
  const rows = await db.query<{ id: number }>(
    'SELECT enterprise_id AS id FROM enterprises WHERE enterprise_id = ANY ($1::bigint[])',
    [enterprises],
  )
  const known = new Set(rows.map((row) => Number(row.id)))
  const unknown = enterprises.find((id) => !known.has(id))
  if (unknown !== undefined) {
    throw new ApiError(ResponseCode.INVALID_PARAMETER, `enterprises: there is no enterprise ${unknown}`)
  }
}
