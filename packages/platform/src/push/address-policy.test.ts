import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { InvalidParameterError } from '@earshot/protocol'
import { Agent, request } from 'undici'
import {
  ADDRESS_REFUSED_CODE,
  addressRefusal,
  checkPushUrl,
  guardedLookup,
  hostLiteralRefusal,
} from './address-policy.js'

const METADATA = 'a cloud metadata address'
const LINK_LOCAL = 'a link-local address'
const LOOPBACK = /^a loopback address \(set EARSHOT_PUSH_ALLOW_PRIVATE=1/
const PRIVATE = /^a private address \(set EARSHOT_PUSH_ALLOW_PRIVATE=1/

// [address, reason when private addresses are refused, reason when they are allowed]
const ADDRESSES: [string, string | RegExp | undefined, string | RegExp | undefined][] = [
  ['93.184.216.34', undefined, undefined],
  ['8.8.8.8', undefined, undefined],
  ['2606:4700::1111', undefined, undefined],
  ['::ffff:8.8.8.8', undefined, undefined],
  ['172.32.0.1', undefined, undefined],
  ['100.128.0.1', undefined, undefined],
  ['169.254.169.254', METADATA, METADATA],
  ['169.254.170.2', METADATA, METADATA],
  ['100.100.100.200', METADATA, METADATA],
  ['fd00:ec2::254', METADATA, METADATA],
  ['::ffff:169.254.169.254', METADATA, METADATA],
  ['::ffff:a9fe:a9fe', METADATA, METADATA],
  ['::ffff:100.100.100.200', METADATA, METADATA],
  ['169.254.1.1', LINK_LOCAL, LINK_LOCAL],
  ['fe80::1', LINK_LOCAL, LINK_LOCAL],
  ['fe80::1%eth0', LINK_LOCAL, LINK_LOCAL],
  ['::ffff:169.254.1.1', LINK_LOCAL, LINK_LOCAL],
  ['0.0.0.0', 'an unspecified address', 'an unspecified address'],
  ['0.1.2.3', 'an unspecified address', 'an unspecified address'],
  ['::', 'an unspecified address', 'an unspecified address'],
  ['224.0.0.1', 'a multicast address', 'a multicast address'],
  ['239.255.255.250', 'a multicast address', 'a multicast address'],
  ['ff02::1', 'a multicast address', 'a multicast address'],
  ['240.0.0.1', 'a reserved address', 'a reserved address'],
  ['255.255.255.255', 'a reserved address', 'a reserved address'],
  ['::7f00:1', 'a reserved address', 'a reserved address'],
  ['127.0.0.1', LOOPBACK, undefined],
  ['127.255.0.9', LOOPBACK, undefined],
  ['::1', LOOPBACK, undefined],
  ['::ffff:127.0.0.1', LOOPBACK, undefined],
  ['10.0.0.1', PRIVATE, undefined],
  ['172.16.0.1', PRIVATE, undefined],
  ['172.31.255.255', PRIVATE, undefined],
  ['192.168.1.1', PRIVATE, undefined],
  ['100.64.0.1', PRIVATE, undefined],
  ['100.127.255.255', PRIVATE, undefined],
  ['198.18.0.1', PRIVATE, undefined],
  ['198.19.255.255', PRIVATE, undefined],
  ['fc00::1', PRIVATE, undefined],
  ['fd12:3456::1', PRIVATE, undefined],
  ['::ffff:10.0.0.1', PRIVATE, undefined],
  ['not-an-ip', 'not an IP address', 'not an IP address'],
]

function assertReason(actual: string | undefined, expected: string | RegExp | undefined, label: string) {
  if (expected === undefined) assert.equal(actual, undefined, label)
  else if (typeof expected === 'string') assert.equal(actual, expected, label)
  else assert.match(actual ?? '', expected, label)
}

describe('addressRefusal', () => {
  for (const [address, refusedPrivate, allowedPrivate] of ADDRESSES) {
    test(address, () => {
      assertReason(addressRefusal(address, false), refusedPrivate, `${address} without allowPrivate`)
      assertReason(addressRefusal(address, true), allowedPrivate, `${address} with allowPrivate`)
    })
  }
})

describe('hostLiteralRefusal', () => {
  test('checks IP literals, including bracketed IPv6 and non-decimal IPv4', () => {
    assert.equal(hostLiteralRefusal(new URL('http://[::ffff:169.254.169.254]/'), true), METADATA)
    assert.equal(hostLiteralRefusal(new URL('http://[fe80::1]:8080/'), true), LINK_LOCAL)
    assert.match(hostLiteralRefusal(new URL('http://0x7f.1/'), false) ?? '', LOOPBACK)
    assert.equal(hostLiteralRefusal(new URL('http://127.0.0.1/'), true), undefined)
    assert.equal(hostLiteralRefusal(new URL('https://8.8.8.8/'), false), undefined)
  })

  test('refuses metadata host names and leaves other names to the lookup', () => {
    assert.equal(
      hostLiteralRefusal(new URL('http://METADATA.google.internal./'), true),
      'a cloud metadata host',
    )
    assert.equal(hostLiteralRefusal(new URL('http://metadata/'), true), 'a cloud metadata host')
    assert.equal(hostLiteralRefusal(new URL('http://localhost/'), false), undefined)
  })
})

async function assertRefused(promise: Promise<unknown>, message?: RegExp) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof InvalidParameterError, `expected InvalidParameterError, got ${error}`)
    assert.equal(error.responseCode, 4001)
    assert.equal(error.field, 'pushUrl')
    assert.match(error.message, /^pushUrl: /)
    if (message) assert.match(error.message, message)
    return true
  })
}

const resolvesTo =
  (...addresses: string[]) =>
  async () =>
    addresses
const notFound = async (): Promise<string[]> => {
  throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' })
}

describe('checkPushUrl', () => {
  test('null and undefined mean no push URL', async () => {
    assert.equal(await checkPushUrl(null, false), null)
    assert.equal(await checkPushUrl(undefined, false), null)
  })

  test('accepts a public http(s) URL and returns it normalised', async () => {
    assert.equal(
      await checkPushUrl('HTTPS://Partner.Example/push', false, resolvesTo('93.184.216.34')),
      'https://partner.example/push',
    )
    assert.equal(await checkPushUrl('http://8.8.8.8:8080', false, notFound), 'http://8.8.8.8:8080/')
  })

  test('refuses what is not an absolute http(s) URL', async () => {
    await assertRefused(checkPushUrl('ftp://partner.example/push', false, resolvesTo('93.184.216.34')))
    await assertRefused(checkPushUrl('/push', false, resolvesTo('93.184.216.34')))
    await assertRefused(checkPushUrl(42, false, resolvesTo('93.184.216.34')))
    await assertRefused(checkPushUrl('', false, resolvesTo('93.184.216.34')))
    await assertRefused(
      checkPushUrl(`https://partner.example/${'a'.repeat(2048)}`, false, resolvesTo('93.184.216.34')),
      /2048/,
    )
  })

  test('refuses credentials in the URL', async () => {
    await assertRefused(
      checkPushUrl('https://user:secret@partner.example/push', false, resolvesTo('93.184.216.34')),
      /credentials/,
    )
    await assertRefused(
      checkPushUrl('https://user@partner.example/push', true, resolvesTo('93.184.216.34')),
      /credentials/,
    )
  })

  test('refuses metadata host names even when private addresses are allowed', async () => {
    for (const url of ['http://metadata.google.internal/', 'http://Metadata.Goog./x', 'http://metadata/']) {
      await assertRefused(checkPushUrl(url, true, resolvesTo('93.184.216.34')), /metadata/)
    }
  })

  test('refuses refused IP literals', async () => {
    await assertRefused(
      checkPushUrl('http://169.254.169.254/latest', true),
      /169\.254\.169\.254 is a cloud metadata/,
    )
    await assertRefused(checkPushUrl('http://[::ffff:a9fe:a9fe]/', true), /metadata/)
    await assertRefused(checkPushUrl('http://10.1.2.3/', false), /10\.1\.2\.3 is a private address/)
    assert.equal(await checkPushUrl('http://10.1.2.3/', true), 'http://10.1.2.3/')
  })

  test('refuses a name resolving to a refused address', async () => {
    await assertRefused(
      checkPushUrl('https://internal.example/push', false, resolvesTo('10.0.0.5')),
      /internal\.example resolves to 10\.0\.0\.5, a private address/,
    )
    await assertRefused(
      checkPushUrl('https://mixed.example/push', true, resolvesTo('93.184.216.34', '169.254.169.254')),
      /169\.254\.169\.254, a cloud metadata address/,
    )
    assert.equal(
      await checkPushUrl('https://internal.example/push', true, resolvesTo('10.0.0.5')),
      'https://internal.example/push',
    )
  })

  test('refuses a name that does not resolve', async () => {
    await assertRefused(checkPushUrl('https://nowhere.example/', true, notFound), /does not resolve/)
    await assertRefused(checkPushUrl('https://empty.example/', true, resolvesTo()), /does not resolve/)
  })

  test('localhost, resolved for real, is refused unless private addresses are allowed', async () => {
    await assertRefused(checkPushUrl('http://localhost:9999/push', false), /localhost resolves to .*loopback/)
    assert.equal(await checkPushUrl('http://localhost:9999/push', true), 'http://localhost:9999/push')
  })
})

function errorCodes(error: unknown): unknown[] {
  const codes: unknown[] = []
  for (let e = error; e instanceof Error; e = e.cause) codes.push((e as NodeJS.ErrnoException).code)
  return codes
}

describe('guardedLookup on a real connection', () => {
  let server: Server
  let port: number
  before(async () => {
    server = createServer((_request, response) => response.end('ok'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  test('refuses to connect to localhost when private addresses are refused', async () => {
    const dispatcher = new Agent({ connect: { lookup: guardedLookup(false) } })
    try {
      await assert.rejects(request(`http://localhost:${port}/`, { dispatcher }), (error: unknown) => {
        assert.ok(errorCodes(error).includes(ADDRESS_REFUSED_CODE), `unexpected error ${error}`)
        return true
      })
    } finally {
      await dispatcher.close()
    }
  })

  test('connects to localhost when private addresses are allowed', async () => {
    const dispatcher = new Agent({ connect: { lookup: guardedLookup(true) } })
    try {
      const response = await request(`http://localhost:${port}/`, { dispatcher })
      assert.equal(response.statusCode, 200)
      assert.equal(await response.body.text(), 'ok')
    } finally {
      await dispatcher.close()
    }
  })

  test('calls back with one address when options.all is not set', async () => {
    const lookup = guardedLookup(true)
    const result = await new Promise<[string, number | undefined]>((resolve, reject) =>
      lookup('localhost', {}, (error, address, family) =>
        error ? reject(error) : resolve([address as string, family]),
      ),
    )
    assert.equal(typeof result[0], 'string')
    assert.ok(result[1] === 4 || result[1] === 6)
    await assert.rejects(
      new Promise((resolve, reject) =>
        guardedLookup(false)('localhost', {}, (error, address) => (error ? reject(error) : resolve(address))),
      ),
      (error: NodeJS.ErrnoException) => {
        assert.equal(error.code, ADDRESS_REFUSED_CODE)
        assert.match(error.message, /^push address .* refused: a loopback address/)
        return true
      },
    )
  })
})
