import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from './config.js'

test('the defaults', () => {
  const config = loadConfig({})
  assert.equal(config.port, 8080)
  assert.equal(config.adminPort, 8081)
  assert.equal(config.adminHost, '127.0.0.1')
  assert.equal(config.dataDir, './.earshot/data')
  assert.equal(config.databaseUrl, undefined)
  assert.equal(config.tokenTtlSeconds, 7200)
  assert.equal(config.bodyLimitBytes, 64 * 1024)
  assert.equal(config.replayWindowSeconds, 365 * 86_400)
  assert.equal(config.keyGraceSeconds, 86_400)
  assert.equal(config.adminToken, undefined)
})

test('environment variables are read by their documented names; flags win over them', () => {
  const config = loadConfig(
    {
      EARSHOT_PORT: '9000',
      EARSHOT_TOKEN_TTL: '60',
      DATABASE_URL: 'postgres://db/x',
      EARSHOT_ADMIN_TOKEN: 'a'.repeat(20),
    },
    { port: '9100' },
  )
  assert.equal(config.port, 9100)
  assert.equal(config.tokenTtlSeconds, 60)
  assert.equal(config.databaseUrl, 'postgres://db/x')
  assert.equal(config.adminToken, 'a'.repeat(20))
})

test('every wrong value is named with its rule, and secrets are not echoed', () => {
  assert.throws(
    () =>
      loadConfig({
        EARSHOT_PORT: 'abc',
        EARSHOT_ADMIN_PORT: '70000',
        EARSHOT_TOKEN_TTL: '0',
        DATABASE_URL: 'mysql://secret@db',
        EARSHOT_ADMIN_TOKEN: 'short',
        EARSHOT_LOG_LEVEL: 'loud',
      }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      for (const name of [
        'EARSHOT_PORT',
        'EARSHOT_ADMIN_PORT',
        'EARSHOT_TOKEN_TTL',
        'DATABASE_URL',
        'EARSHOT_ADMIN_TOKEN',
        'EARSHOT_LOG_LEVEL',
      ]) {
        assert.match(error.message, new RegExp(`${name} must be`))
      }
      assert.match(error.message, /EARSHOT_PORT must be an integer from 0 to 65535; got "abc"/)
      assert.doesNotMatch(error.message, /secret@db|short/)
      return true
    },
  )
  assert.throws(() => loadConfig({}, { port: '-1' }), /--port must be an integer/)
})

test('EARSHOT_REPLAY_WINDOW below the token lifetime is refused naming both; EARSHOT_REQUEST_MAX_AGE', () => {
  assert.equal(loadConfig({}).requestMaxAgeSeconds, 300)
  assert.equal(loadConfig({ EARSHOT_REQUEST_MAX_AGE: '30' }).requestMaxAgeSeconds, 30)
  assert.throws(() => loadConfig({ EARSHOT_REQUEST_MAX_AGE: '0' }), /EARSHOT_REQUEST_MAX_AGE must be/)
  assert.throws(
    () => loadConfig({ EARSHOT_REPLAY_WINDOW: '1' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError)
      assert.match(
        error.message,
        /EARSHOT_REPLAY_WINDOW \(1 s\) must not be below EARSHOT_TOKEN_TTL \(7200 s\)/,
      )
      return true
    },
  )
  assert.throws(
    () => loadConfig({ EARSHOT_REPLAY_WINDOW: '600', EARSHOT_TOKEN_TTL: '601' }),
    /EARSHOT_REPLAY_WINDOW \(600 s\) must not be below EARSHOT_TOKEN_TTL \(601 s\)/,
  )
  assert.throws(
    () => loadConfig({ EARSHOT_REPLAY_WINDOW: '600' }, { tokenTtlSeconds: '601' }),
    /EARSHOT_TOKEN_TTL/,
  )
  assert.equal(
    loadConfig({ EARSHOT_REPLAY_WINDOW: '600', EARSHOT_TOKEN_TTL: '600' }).replayWindowSeconds,
    600,
  )
})

test('push settings: the retry schedule and windows, compressed for tests', () => {
  const defaults = loadConfig({})
  assert.deepEqual(
    defaults.pushRetryScheduleSeconds,
    [15, 15, 30, 180, 600, 1200, 1800, 1800, 1800, 3600, 10_800, 10_800, 10_800, 21_600, 21_600],
  )
  assert.equal(defaults.pushConfirmWindowSeconds, 600)
  assert.equal(defaults.pushTimeoutSeconds, 10)
  assert.equal(defaults.pushAllowPrivate, false)
  assert.equal(defaults.pushDispatch, true)
  assert.equal(defaults.pushDisableAfterSeconds, 5 * 86_400)

  const compressed = loadConfig({
    EARSHOT_PUSH_RETRY_SCHEDULE: '0.2, 0.5,1',
    EARSHOT_PUSH_CONFIRM_WINDOW: '0.4',
    EARSHOT_PUSH_TIMEOUT: '1.5',
    EARSHOT_PUSH_ALLOW_PRIVATE: '1',
    EARSHOT_PUSH_DISPATCH: '0',
    EARSHOT_PUSH_DISABLE_AFTER: '0.5',
  })
  assert.deepEqual(compressed.pushRetryScheduleSeconds, [0.2, 0.5, 1])
  assert.equal(compressed.pushConfirmWindowSeconds, 0.4)
  assert.equal(compressed.pushTimeoutSeconds, 1.5)
  assert.equal(compressed.pushAllowPrivate, true)
  assert.equal(compressed.pushDispatch, false)
  assert.equal(compressed.pushDisableAfterSeconds, 0.5)

  assert.throws(
    () =>
      loadConfig({
        EARSHOT_PUSH_RETRY_SCHEDULE: '15,abc',
        EARSHOT_PUSH_TIMEOUT: '0',
        EARSHOT_PUSH_ALLOW_PRIVATE: 'yes',
        EARSHOT_PUSH_DISABLE_AFTER: '5d',
      }),
    (error: unknown) =>
      error instanceof ConfigError &&
      /EARSHOT_PUSH_RETRY_SCHEDULE must be comma-separated seconds/.test(error.message) &&
      /EARSHOT_PUSH_TIMEOUT must be seconds from 0.01 to 300; got "0"/.test(error.message) &&
      /EARSHOT_PUSH_ALLOW_PRIVATE must be 1 or 0/.test(error.message) &&
      /EARSHOT_PUSH_DISABLE_AFTER must be seconds from 0.01 to 10 years; got "5d"/.test(error.message),
  )
})

test('connection limits: timeouts for headers and requests, keep-alive, caps per listener and per client', () => {
  const defaults = loadConfig({})
  assert.equal(defaults.requestTimeoutSeconds, 30)
  assert.equal(defaults.headersTimeoutSeconds, 10)
  assert.equal(defaults.adminRequestTimeoutSeconds, 3600)
  assert.equal(defaults.keepAliveTimeoutSeconds, 72)
  assert.equal(defaults.maxConnections, 4096)
  assert.equal(defaults.maxConnectionsPerClient, 128)

  const set = loadConfig({
    EARSHOT_REQUEST_TIMEOUT: '0.5',
    EARSHOT_HEADERS_TIMEOUT: '2',
    EARSHOT_ADMIN_REQUEST_TIMEOUT: '7200',
    EARSHOT_KEEP_ALIVE_TIMEOUT: '5',
    EARSHOT_MAX_CONNECTIONS: '512',
    EARSHOT_MAX_CONNECTIONS_PER_CLIENT: '0',
  })
  assert.equal(set.requestTimeoutSeconds, 0.5)
  assert.equal(set.headersTimeoutSeconds, 2)
  assert.equal(set.adminRequestTimeoutSeconds, 7200)
  assert.equal(set.keepAliveTimeoutSeconds, 5)
  assert.equal(set.maxConnections, 512)
  assert.equal(set.maxConnectionsPerClient, 0)

  assert.throws(
    () =>
      loadConfig({
        EARSHOT_REQUEST_TIMEOUT: '0',
        EARSHOT_ADMIN_REQUEST_TIMEOUT: 'forever',
        EARSHOT_KEEP_ALIVE_TIMEOUT: '-1',
        EARSHOT_MAX_CONNECTIONS: '0',
      }),
    (error: unknown) =>
      error instanceof ConfigError &&
      /EARSHOT_REQUEST_TIMEOUT must be seconds from 0.01 to 3600; got "0"/.test(error.message) &&
      /EARSHOT_ADMIN_REQUEST_TIMEOUT must be seconds from 0.01 to 86400/.test(error.message) &&
      /EARSHOT_KEEP_ALIVE_TIMEOUT must be seconds/.test(error.message) &&
      /EARSHOT_MAX_CONNECTIONS must be a number of connections from 1 to 1000000/.test(error.message),
  )
})

test('the demo pushes to loopback and private addresses unless told not to', () => {
  assert.equal(loadConfig({}).pushAllowPrivate, false)
  assert.equal(loadConfig({}, { demo: '1' }).pushAllowPrivate, true)
  assert.equal(loadConfig({ EARSHOT_DEMO: '1' }).pushAllowPrivate, true)
  assert.equal(loadConfig({ EARSHOT_DEMO: '1', EARSHOT_PUSH_ALLOW_PRIVATE: '0' }).pushAllowPrivate, false)
})
