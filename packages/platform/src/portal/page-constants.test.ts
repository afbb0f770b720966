import assert from 'node:assert/strict'
import { test } from 'node:test'
import { dataModule } from '../http/static-asset.js'
import { selfServiceActions } from '../self-service/self-service-actions.js'
import * as pageConstants from './page-constants.js'
import { portalRoutes } from './portal-routes.js'

test("the page's actions are every route the portal serves an action at, as plain data a browser loads", {
  timeout: 10_000,
}, async () => {
  const source = dataModule(pageConstants)
  assert.doesNotMatch(source, /^\s*import[\s{]/m)
  const served = await import(`data:text/javascript,${encodeURIComponent(source)}`)
  assert.deepEqual({ ...served }, { ...pageConstants })

  const actions = Object.entries(served.PORTAL_ACTIONS as Record<string, string>)
  const routes = portalRoutes.map((route) => route.path)
  const ofSession = ['/portal/api/session', '/portal/api/sign-out']
  assert.deepEqual(
    actions.map(([, path]) => `/portal/api/${path}`).sort(),
    routes.filter((path) => path.startsWith('/portal/api/') && !ofSession.includes(path)).sort(),
  )
  assert.deepEqual(
    actions.map(([operationId]) => operationId).sort(),
    selfServiceActions.map((action) => action.contract.operationId).sort(),
  )
})
