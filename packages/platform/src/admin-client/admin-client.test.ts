import assert from 'node:assert/strict'
import { test } from 'node:test'
import { adminRoutes } from '../listeners/admin-routes.js'
import type { AdminClient, Enterprise } from './admin-client.js'
import { adminContracts } from './admin-contracts.js'
import { adminOperations } from './admin-operations.js'
import { adminOperationsModule } from './admin-operations-data.js'

/*
 * The admin client is typed by the contracts: the `@ts-expect-error` lines compile only while tsc refuses
 * a call off its contract. Nothing is sent: the client points at no platform.
 */
function offContractCalls(client: AdminClient) {
  // @ts-expect-error: createEnterprise takes a name, not a title
  void client.call('createEnterprise', { body: { title: 'Acme' } })
  // @ts-expect-error: enterpriseId is an integer
  void client.call('rotateKey', { params: { enterpriseId: 'one' } })
  // @ts-expect-error: disableEnterprise names its enterprise
  void client.call('disableEnterprise')
  // @ts-expect-error: deleteRecording's path names the recording too
  void client.call('deleteRecording', { params: { enterpriseId: 1 } })
  // @ts-expect-error: no such operation
  void client.call('dropEverything')
  // @ts-expect-error: a key's role is one of the roles
  void client.call('createKey', { body: { name: 'ci', role: 'superuser' } })
  // @ts-expect-error: revokeKey names its key
  void client.call('revokeKey')
  // @ts-expect-error: the audit trail is filtered by actor, not by who
  void client.call('listAudit', { query: { who: 'key:1' } })
  // @ts-expect-error: listEnterprises answers {enterprises}, not a list
  const listed: Promise<Enterprise[]> = client.call('listEnterprises')
  return listed
}

test('every admin route is mounted from its contract, and the client addresses each', () => {
  assert.equal(typeof offContractCalls, 'function')
  const mounted = adminRoutes.map(({ operationId, method, path }) => ({ operationId, method, path }))
  const declared = adminContracts.map(({ operationId, method, path }) => ({ operationId, method, path }))
  assert.deepEqual(mounted, declared)
  for (const { operationId, method, path } of declared) {
    assert.deepEqual(adminOperations[operationId], {
      method,
      path,
      answer:
        operationId === 'metrics'
          ? 'text'
          : operationId === 'importRecordings' || operationId === 'exportAudit'
            ? 'lines'
            : 'json',
    })
  }
})

test("the console's table of operations is the client's, as plain data", async () => {
  const source = adminOperationsModule()
  assert.doesNotMatch(source, /^\s*import[\s{]/m)
  const module = await import(`data:text/javascript,${encodeURIComponent(source)}`)
  assert.deepEqual(module.adminOperations, adminOperations)
})
