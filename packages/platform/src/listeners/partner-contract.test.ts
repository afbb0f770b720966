import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { MAX_PATH_PARAMETER_LENGTH, PARTNER_BODY_LIMIT, PartnerOperation } from '@earshot/protocol'
import { configEnvironment } from '../config/config.js'
import { MAX_PARAM_LENGTH } from '../http/create-server.js'
import { partnerRoutes } from './partner-routes.js'

/**
 * The partner listener serves protocol's PartnerOperation, the operations the contract file lists for the
 * kits; the portal's routes (under /portal) are the browser's, and the documents under /.well-known (the
 * key that verifies erasure reports) are for anyone holding a report, not the kits'.
 */

const PROBES = new Set(['health', 'readiness'])

describe("the partner listener and protocol's contract", () => {
  test('every route but the probes is an operation of the contract, with its method and path', () => {
    const served = partnerRoutes
      .filter(
        (route) =>
          !PROBES.has(route.operationId) &&
          !route.path.startsWith('/portal/') &&
          !route.path.startsWith('/.well-known/'),
      )
      .map(({ operationId, method, path }) => [operationId, { method, path }])
    const declared = Object.entries(PartnerOperation).map(([id, { method, path }]) => [id, { method, path }])
    assert.deepEqual(Object.fromEntries(served), Object.fromEntries(declared))
  })

  test('the limits the contract states are those the platform applies', () => {
    assert.equal(MAX_PARAM_LENGTH, MAX_PATH_PARAMETER_LENGTH)
    const bodyLimit = configEnvironment.find(({ env }) => env === 'EARSHOT_BODY_LIMIT')
    assert.equal(bodyLimit?.fallback, PARTNER_BODY_LIMIT.defaultBytes)
  })
})
