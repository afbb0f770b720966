import assert from 'node:assert/strict'
import { test } from 'node:test'
import { PushEventType } from '@earshot/protocol'
import { DELIVERY_STATES } from '../deliveries/delivery-store.js'
import { dataModule } from '../http/static-asset.js'
import * as consoleConstants from './console-constants.js'

test("the console's constants are the platform's, as plain data a browser loads", {
  timeout: 10_000,
}, async () => {
  const source = dataModule(consoleConstants)
  assert.doesNotMatch(source, /^\s*import[\s{]/m)
  const served = await import(`data:text/javascript,${encodeURIComponent(source)}`)
  assert.deepEqual({ ...served }, { ...consoleConstants })
  assert.deepEqual(served.EVENT_TYPES, Object.values(PushEventType))
  // The deliveries filter offers every state once, in the order a delivery goes through them.
  assert.deepEqual([...served.DELIVERY_STATES_BY_STAGE].sort(), [...DELIVERY_STATES].sort())
  assert.deepEqual(served.DELIVERY_STATES_BY_STAGE, [
    'pending',
    'queued',
    'held',
    'in_flight',
    'acked',
    'confirmed',
    'failed',
    'unconfirmed',
    'cancelled',
  ])
  assert.equal(served.INVALID_PARAMETER, 4001)
})
