import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { generateSecret } from '@earshot/protocol'
import { EarshotClient } from './earshot-client.js'
import { EarshotConfigError } from './errors.js'

describe('EarshotClient.fromEnv', { timeout: 10_000 }, () => {
  const secret = generateSecret()

  test('defaults: the base URL http://127.0.0.1:8080 and key version 1', () => {
    const client = EarshotClient.fromEnv({ EARSHOT_ENTERPRISE_ID: '7', EARSHOT_SECRET: secret })
    assert.equal(client.baseUrl, 'http://127.0.0.1:8080')
    assert.equal(client.enterpriseId, 7)
    assert.equal(client.keyVersion, 1)
  })

  test('each variable overrides its default', () => {
    const client = EarshotClient.fromEnv({
      EARSHOT_BASE_URL: 'https://earshot.example',
      EARSHOT_ENTERPRISE_ID: '42',
      EARSHOT_KEY_VERSION: '3',
      EARSHOT_SECRET: secret,
    })
    assert.deepEqual(
      [client.baseUrl, client.enterpriseId, client.keyVersion],
      ['https://earshot.example', 42, 3],
    )
  })

  test('a missing enterprise or secret names the variable to set, never the secret', () => {
    assert.throws(() => EarshotClient.fromEnv({}), {
      name: 'EarshotConfigError',
      message: /^set EARSHOT_ENTERPRISE_ID \(your enterpriseId\) and EARSHOT_SECRET \(its secret\)/,
    })
    assert.throws(() => EarshotClient.fromEnv({ EARSHOT_SECRET: secret }), {
      message: 'set EARSHOT_ENTERPRISE_ID (your enterpriseId), as your Earshot operator gave them',
    })
    assert.throws(() => EarshotClient.fromEnv({ EARSHOT_ENTERPRISE_ID: '1' }), {
      message: 'set EARSHOT_SECRET (its secret), as your Earshot operator gave them',
    })
    assert.throws(
      () => EarshotClient.fromEnv({ EARSHOT_ENTERPRISE_ID: 'one', EARSHOT_SECRET: secret }),
      (error) => error instanceof EarshotConfigError && /EARSHOT_ENTERPRISE_ID must be/.test(error.message),
    )
    assert.throws(
      () => EarshotClient.fromEnv({ EARSHOT_ENTERPRISE_ID: '1', EARSHOT_SECRET: 'short-secret' }),
      (error) => error instanceof EarshotConfigError && !error.message.includes('short-secret'),
    )
  })
})
