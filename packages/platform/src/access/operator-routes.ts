import { ResponseCode } from '@earshot/protocol'
import { idParam, jsonObject } from '../http/admin-params.js'
import { ApiError } from '../http/api-error.js'
import { defineRoute } from '../http/route-spec.js'
import type { Database } from '../storage/database.js'
import {
  addOperatorContract,
  endOperatorSessionsContract,
  listOperatorsContract,
  updateOperatorContract,
} from './access-contract.js'
import { NewOperator, OperatorChanges } from './access-schemas.js'
import { addOperator, listOperators, setupUrl, updateOperator } from './operator-store.js'
import { adminOrigin } from './request-origin.js'
import { endOperatorSessions } from './sessions.js'

/** What the operator routes read of the running platform. */
interface OperatorsContext {
  db: Database
  clock: () => number
  randomBytes: (size: number) => Buffer
}

const listOperatorsRoute = defineRoute(listOperatorsContract, (context: OperatorsContext) => async () => ({
  operators: await listOperators(context.db),
}))

const addOperatorRoute = defineRoute(
  addOperatorContract,
  (context: OperatorsContext) =>
    async function addOperatorHandler(request) {
      const body = NewOperator.parse(jsonObject(request.body))
      const added = await addOperator(
        context.db,
        { email: body.email, name: body.name ?? '', role: body.role, enterprises: body.enterprises ?? null },
        context.clock(),
        context.randomBytes,
      )
      if (!added)
        throw new ApiError(ResponseCode.INVALID_PARAMETER, `email: an operator with ${body.email} exists`)
      return { operatorId: added.operatorId, setupUrl: setupUrl(adminOrigin(request), added.setupToken) }
    },
)

const updateOperatorRoute = defineRoute(
  updateOperatorContract,
  (context: OperatorsContext) =>
    async function updateOperatorHandler(request) {
      const operatorId = idParam(request, 'operatorId')
      const changes = OperatorChanges.parse(jsonObject(request.body))
      const updated = await updateOperator(context.db, operatorId, changes)
      if (updated === 'unknown') throw noSuchOperator(operatorId)
      if (updated === 'last-owner') {
        throw new ApiError(
          ResponseCode.INVALID_PARAMETER,
          'this change would leave no enabled owner: make another operator an owner first',
        )
      }
      return updated.after
    },
)

const endOperatorSessionsRoute = defineRoute(
  endOperatorSessionsContract,
  (context: OperatorsContext) =>
    async function endOperatorSessionsHandler(request) {
      const operatorId = idParam(request, 'operatorId')
      const ended = await context.db.transaction(async (tx) => {
        const [exists] = await tx.query('SELECT 1 FROM operators WHERE operator_id = $1', [operatorId])
        if (!exists) throw noSuchOperator(operatorId)
        return endOperatorSessions(tx, operatorId)
      })
      return { ended }
    },
)

export const operatorRoutes = [
  listOperatorsRoute,
  addOperatorRoute,
  updateOperatorRoute,
  endOperatorSessionsRoute,
]

function noSuchOperator(operatorId: number): ApiError {
  return new ApiError(ResponseCode.NOT_FOUND, `no operator ${operatorId}`)
}
