import assert from 'node:assert/strict'
import dns from 'node:dns'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { InvalidParameterError } from '@earshot/protocol'
import ipaddr from 'ipaddr.js'
import { Agent, request } from 'undici'
import { createPushSender } from '../dispatch/push-sender.js'
import {
  ADDRESS_REFUSED_CODE,
  type AddressClass,
  addressRefusal,
  checkPushUrl,
  classifyAddress,
  guardedLookup,
  hostLiteralRefusal,
} from './address-policy.js'

const METADATA = 'a cloud metadata address'
const LINK_LOCAL = 'a link-local address'
const HINT =
  " (allowed only when the platform itself runs with EARSHOT_PUSH_ALLOW_PRIVATE=1, as npm start's demo does: a setting of the platform's environment, not of the CLI)"

type Verdict = AddressClass['verdict']

// [address, range, verdict, embedded IPv4 judged instead]; ranges are ipaddr.js's names, plus
// metadata, unallocated and invalid.
const ADDRESSES: [string, string, Verdict, string?][] = [
  // Public unicast, including right next to refused ranges and through IPv4-embedding forms.
  ['93.184.216.34', 'unicast', 'public'],
  ['8.8.8.8', 'unicast', 'public'],
  ['172.32.0.1', 'unicast', 'public'],
  ['100.128.0.1', 'unicast', 'public'],
  ['198.20.0.1', 'unicast', 'public'],
  ['169.255.0.1', 'unicast', 'public'],
  ['2606:4700::1111', 'unicast', 'public'],
  ['2a00:1450:4001:80b::200e', 'unicast', 'public'],
  ['::ffff:8.8.8.8', 'unicast', 'public', '8.8.8.8'],
  ['::ffff:0:808:808', 'unicast', 'public', '8.8.8.8'],
  ['64:ff9b::808:808', 'unicast', 'public', '8.8.8.8'],
  ['64:ff9b::93.184.216.34', 'unicast', 'public', '93.184.216.34'],
  // Cloud metadata: refused even with allowPrivate, however written.
  ['169.254.169.254', 'metadata', 'refused'],
  ['169.254.170.2', 'metadata', 'refused'],
  ['100.100.100.200', 'metadata', 'refused'],
  ['fd00:ec2::254', 'metadata', 'refused'],
  ['fd00:ec2:0:0:0:0:0:254', 'metadata', 'refused'],
  ['::ffff:169.254.169.254', 'metadata', 'refused', '169.254.169.254'],
  ['::ffff:a9fe:a9fe', 'metadata', 'refused', '169.254.169.254'],
  ['::ffff:0:a9fe:a9fe', 'metadata', 'refused', '169.254.169.254'],
  ['64:ff9b::a9fe:a9fe', 'metadata', 'refused', '169.254.169.254'],
  ['64:ff9b::100.100.100.200', 'metadata', 'refused', '100.100.100.200'],
  // Link-local.
  ['169.254.1.1', 'linkLocal', 'refused'],
  ['fe80::1', 'linkLocal', 'refused'],
  ['fe80::1%eth0', 'linkLocal', 'refused'],
  ['::ffff:169.254.1.1', 'linkLocal', 'refused', '169.254.1.1'],
  ['64:ff9b::a9fe:101', 'linkLocal', 'refused', '169.254.1.1'],
  // Loopback, private, unique-local and carrier-grade NAT: only with allowPrivate.
  ['127.0.0.1', 'loopback', 'private'],
  ['127.255.0.9', 'loopback', 'private'],
  ['::1', 'loopback', 'private'],
  ['::ffff:127.0.0.1', 'loopback', 'private', '127.0.0.1'],
  ['::ffff:0:7f00:1', 'loopback', 'private', '127.0.0.1'],
  ['64:ff9b::7f00:1', 'loopback', 'private', '127.0.0.1'],
  ['10.0.0.1', 'private', 'private'],
  ['172.16.0.1', 'private', 'private'],
  ['172.31.255.255', 'private', 'private'],
  ['192.168.1.1', 'private', 'private'],
  ['::ffff:10.0.0.1', 'private', 'private', '10.0.0.1'],
  ['64:ff9b::c0a8:101', 'private', 'private', '192.168.1.1'],
  ['fc00::1', 'uniqueLocal', 'private'],
  ['fd12:3456::1', 'uniqueLocal', 'private'],
  ['100.64.0.1', 'carrierGradeNat', 'private'],
  ['100.127.255.255', 'carrierGradeNat', 'private'],
  // Never: unspecified, broadcast, multicast.
  ['0.0.0.0', 'unspecified', 'refused'],
  ['0.1.2.3', 'unspecified', 'refused'],
  ['::', 'unspecified', 'refused'],
  ['::ffff:0.0.0.0', 'unspecified', 'refused', '0.0.0.0'],
  ['255.255.255.255', 'broadcast', 'refused'],
  ['224.0.0.1', 'multicast', 'refused'],
  ['239.255.255.250', 'multicast', 'refused'],
  ['ff02::1', 'multicast', 'refused'],
  ['64:ff9b::e000:1', 'multicast', 'refused', '224.0.0.1'],
  // Never: reserved, documentation (TEST-NETs, 2001:db8::/32, 3fff::/20), benchmarking, IETF
  // protocol assignments (192.0.0.0/24), AS112, AMT and the other IPv6 special-purpose ranges.
  ['192.0.0.8', 'reserved', 'refused'],
  ['192.0.2.1', 'reserved', 'refused'],
  ['198.51.100.7', 'reserved', 'refused'],
  ['203.0.113.9', 'reserved', 'refused'],
  ['198.18.0.1', 'reserved', 'refused'],
  ['198.19.255.255', 'reserved', 'refused'],
  ['192.88.99.1', 'reserved', 'refused'],
  ['240.0.0.1', 'reserved', 'refused'],
  ['192.31.196.1', 'as112', 'refused'],
  ['192.52.193.1', 'amt', 'refused'],
  ['2001:db8::1', 'reserved', 'refused'],
  ['3fff::1', 'reserved', 'refused'],
  ['2001:1::1', 'reserved', 'refused'],
  ['2001:2::1', 'benchmarking', 'refused'],
  ['2001:3::1', 'amt', 'refused'],
  ['2001:4:112::1', 'as112v6', 'refused'],
  ['2001:10::1', 'deprecatedOrchid', 'refused'],
  ['2001:20::1', 'orchid2', 'refused'],
  ['2001:30::1', 'droneRemoteIdProtocolEntityTags', 'refused'],
  ['fec0::1', 'deprecatedSiteLocal', 'refused'],
  ['100::1', 'discard', 'refused'],
  ['5f00::1', 'segmentRouting', 'refused'],
  ['::ffff:192.0.2.1', 'reserved', 'refused', '192.0.2.1'],
  // Never: 6to4, Teredo and local-use NAT64, whatever IPv4 address they seem to carry.
  ['2002:a9fe:a9fe::', '6to4', 'refused'],
  ['2002:7f00:1::1', '6to4', 'refused'],
  ['2002:808:808::1', '6to4', 'refused'],
  ['2001::1', 'teredo', 'refused'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo', 'refused'],
  ['64:ff9b:1::a9fe:a9fe', 'rfc6052', 'refused'],
  ['64:ff9b:1::808:808', 'rfc6052', 'refused'],
  // Never: IPv6 outside 2000::/3 that ipaddr.js calls unicast (IPv4-compatible ::a.b.c.d, …).
  ['::7f00:1', 'unallocated', 'refused'],
  ['::8.8.8.8', 'unallocated', 'refused'],
  ['::169.254.169.254', 'unallocated', 'refused'],
  ['1::1', 'unallocated', 'refused'],
  ['64:ff9b:0:0:1::1', 'unallocated', 'refused'],
  ['4000::1', 'unallocated', 'refused'],
  // Not IP addresses (lookups and URL hosts give canonical ones; ipaddr.js alone would take 0x7f.1).
  ['not-an-ip', 'invalid', 'refused'],
  ['0x7f.1', 'invalid', 'refused'],
  ['127.1', 'invalid', 'refused'],
  ['', 'invalid', 'refused'],
]

describe('classifyAddress and addressRefusal', { timeout: 30_000 }, () => {
  for (const [address, range, verdict, embedded] of ADDRESSES) {
    test(`${address || '(empty)'}: ${range}, ${verdict}`, () => {
      assert.deepEqual(classifyAddress(address), { range, verdict, ...(embedded && { embedded }) })
      const refused = addressRefusal(address, false)
      const refusedWithPrivate = addressRefusal(address, true)
      if (verdict === 'public') {
        assert.equal(refused, undefined)
        assert.equal(refusedWithPrivate, undefined)
      } else if (verdict === 'private') {
        assert.ok(refused?.endsWith(HINT), refused)
        assert.equal(refusedWithPrivate, undefined)
      } else {
        assert.ok(refused && !refused.endsWith(HINT), refused)
        assert.equal(refusedWithPrivate, refused)
      }
      if (embedded && verdict !== 'public') assert.match(refused ?? '', /^an IPv6 address embedding /)
    })
  }

  test('the table covers every range ipaddr.js names', () => {
    const named = (prototype: object) =>
      Object.keys((prototype as { SpecialRanges: Record<string, unknown> }).SpecialRanges)
    const covered = new Set(
      ADDRESSES.filter(([, range]) => range !== 'invalid').map(([address]) =>
        ipaddr.parse(address.replace(/%.*$/, '')).range(),
      ),
    )
    for (const range of [...named(ipaddr.IPv4.prototype), ...named(ipaddr.IPv6.prototype), 'unicast']) {
      assert.ok(covered.has(range as never), `no address in the ${range} range`)
    }
    assert.ok(ADDRESSES.length >= 40)
  })

  test('says why, naming an embedded IPv4 address', () => {
    assert.equal(addressRefusal('169.254.169.254', true), METADATA)
    assert.equal(
      addressRefusal('64:ff9b::a9fe:a9fe', true),
      'an IPv6 address embedding 169.254.169.254, a cloud metadata address',
    )
    assert.equal(addressRefusal('127.0.0.1', false), `a loopback address${HINT}`)
    assert.equal(
      addressRefusal('64:ff9b::7f00:1', false),
      `an IPv6 address embedding 127.0.0.1, a loopback address${HINT}`,
    )
    assert.equal(addressRefusal('10.0.0.1', false), `a private address${HINT}`)
    assert.equal(addressRefusal('2002:a9fe:a9fe::', true), 'a 6to4 address')
    assert.equal(addressRefusal('2001::1', true), 'a Teredo address')
    assert.equal(addressRefusal('64:ff9b:1::a9fe:a9fe', true), 'a local-use NAT64 address')
    assert.equal(addressRefusal('198.51.100.7', true), 'a reserved address')
    assert.equal(addressRefusal('::7f00:1', true), 'an unallocated IPv6 address')
    assert.equal(addressRefusal('5f00::1', true), 'a special-purpose address (segmentRouting)')
    assert.equal(addressRefusal('not-an-ip', true), 'not an IP address')
  })
})

describe('hostLiteralRefusal', { timeout: 30_000 }, () => {
  test('checks IP literals, including bracketed IPv6 and non-decimal IPv4', () => {
    assert.equal(
      hostLiteralRefusal(new URL('http://[::ffff:169.254.169.254]/'), true),
      `an IPv6 address embedding 169.254.169.254, ${METADATA}`,
    )
    assert.equal(hostLiteralRefusal(new URL('http://[fe80::1]:8080/'), true), LINK_LOCAL)
    assert.equal(hostLiteralRefusal(new URL('http://0x7f.1/'), false), `a loopback address${HINT}`)
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

  test('judges NAT64 literals by their IPv4 address and refuses 6to4 ones', () => {
    const refusal = (url: string, allowPrivate: boolean) => hostLiteralRefusal(new URL(url), allowPrivate)
    assert.match(refusal('http://[64:ff9b::a9fe:a9fe]/', true) ?? '', /169\.254\.169\.254, a cloud metadata/)
    assert.match(refusal('http://[64:ff9b::169.254.1.1]:8080/', true) ?? '', /169\.254\.1\.1, a link-local/)
    assert.match(refusal('http://[64:ff9b::7f00:1]/', false) ?? '', /127\.0\.0\.1, a loopback address/)
    assert.equal(refusal('http://[64:ff9b::7f00:1]/', true), undefined)
    assert.equal(refusal('http://[2002:a9fe:a9fe::]/', true), 'a 6to4 address')
    assert.equal(refusal('http://[64:ff9b::808:808]/', false), undefined)
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

describe('checkPushUrl', { timeout: 30_000 }, () => {
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
    await assertRefused(
      checkPushUrl('http://[64:ff9b::a9fe:a9fe]/latest', true),
      /64:ff9b::a9fe:a9fe is an IPv6 address embedding 169\.254\.169\.254, a cloud metadata address/,
    )
    await assertRefused(
      checkPushUrl('http://[64:ff9b::7f00:1]/', false),
      /embedding 127\.0\.0\.1, a loopback/,
    )
    await assertRefused(
      checkPushUrl('http://[2002:a9fe:a9fe::]/', true),
      /2002:a9fe:a9fe:: is a 6to4 address/,
    )
    await assertRefused(checkPushUrl('http://[2001:db8::1]/', true), /reserved/)
    await assertRefused(checkPushUrl('http://192.0.2.10/', true), /reserved/)
    assert.equal(await checkPushUrl('http://[64:ff9b::808:808]/', false), 'http://[64:ff9b::808:808]/')
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
    await assertRefused(
      checkPushUrl('https://nat64.example/push', true, resolvesTo('64:ff9b::a9fe:a9fe')),
      /resolves to 64:ff9b::a9fe:a9fe, an IPv6 address embedding 169\.254\.169\.254/,
    )
    await assertRefused(
      checkPushUrl('https://six-to-four.example/push', true, resolvesTo('2002:a9fe:a9fe::1')),
      /6to4/,
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

describe('guardedLookup on a real connection', { timeout: 30_000 }, () => {
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

describe('connect-time checks of NAT64 and 6to4 addresses', { timeout: 30_000 }, () => {
  const resolving =
    (answers: Record<string, string>) =>
    (hostname: string, _options: unknown, callback: (...args: unknown[]) => void) => {
      const address = answers[hostname]
      if (!address) return callback(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }))
      callback(null, [{ address, family: 6 }])
    }
  const answers = {
    'nat64-metadata.example': '64:ff9b::a9fe:a9fe',
    'nat64-loopback.example': '64:ff9b::7f00:1',
    'six-to-four.example': '2002:a9fe:a9fe::1',
  }

  test('guardedLookup refuses names re-pointed at them', async (t) => {
    t.mock.method(dns, 'lookup', resolving(answers))
    const lookupWith = (allowPrivate: boolean, host: string) =>
      new Promise((resolve, reject) =>
        guardedLookup(allowPrivate)(host, { all: true }, (error, addresses) =>
          error ? reject(error) : resolve(addresses),
        ),
      )
    const refused = (message: RegExp) => (error: NodeJS.ErrnoException) => {
      assert.equal(error.code, ADDRESS_REFUSED_CODE)
      assert.match(error.message, message)
      return true
    }
    await assert.rejects(
      lookupWith(true, 'nat64-metadata.example'),
      refused(/^push address 64:ff9b::a9fe:a9fe refused: .*169\.254\.169\.254, a cloud metadata/),
    )
    await assert.rejects(lookupWith(false, 'nat64-loopback.example'), refused(/127\.0\.0\.1, a loopback/))
    assert.deepEqual(await lookupWith(true, 'nat64-loopback.example'), [
      { address: '64:ff9b::7f00:1', family: 6 },
    ])
    await assert.rejects(lookupWith(true, 'six-to-four.example'), refused(/a 6to4 address/))
  })

  test('the push sender refuses them as literals and as resolved names, without connecting', async (t) => {
    t.mock.method(dns, 'lookup', resolving(answers))
    const sender = createPushSender({ timeoutMs: 5_000, allowPrivate: true, connectionsPerOrigin: 1 })
    try {
      const send = (url: string) => sender.send({ url, eventId: 'e-1', body: '{}' })
      for (const url of [
        'http://[64:ff9b::a9fe:a9fe]/push',
        'http://[2002:a9fe:a9fe::]/push',
        'http://nat64-metadata.example/push',
        'http://six-to-four.example/push',
      ]) {
        const outcome = await send(url)
        assert.equal(outcome.result, 'address_refused', `${url}: ${outcome.error}`)
        assert.equal(outcome.acked, false)
        assert.match(outcome.error ?? '', /push address .*refused: /)
      }
    } finally {
      await sender.close()
    }
  })
})

describe('redirects', { timeout: 30_000 }, () => {
  let target: Server
  let redirecting: Server
  let targetHits = 0
  before(async () => {
    target = createServer((_request, response) => {
      targetHits += 1
      response.setHeader('content-type', 'application/json')
      response.end('{"code":2000}')
    })
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve))
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`
    redirecting = createServer((request, response) => {
      const status = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('status'))
      response.writeHead(status, { location: targetUrl }).end()
    })
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve))
  })
  after(async () => {
    await new Promise<void>((resolve) => target.close(() => resolve()))
    await new Promise<void>((resolve) => redirecting.close(() => resolve()))
  })

  test('a redirect, even to an address allowed here, is a failed attempt and is not followed', async () => {
    // allowPrivate so that both servers, on loopback, may be reached: only not following keeps the
    // target from being hit.
    const sender = createPushSender({ timeoutMs: 5_000, allowPrivate: true, connectionsPerOrigin: 1 })
    const port = (redirecting.address() as AddressInfo).port
    try {
      for (const status of [301, 302, 303, 307, 308]) {
        const outcome = await sender.send({
          url: `http://127.0.0.1:${port}/push?status=${status}`,
          eventId: `e-${status}`,
          body: '{}',
        })
        assert.equal(outcome.result, 'rejected')
        assert.equal(outcome.acked, false)
        assert.equal(outcome.httpStatus, status)
        assert.equal(outcome.error, `HTTP ${status}`)
      }
      assert.equal(targetHits, 0)
    } finally {
      await sender.close()
    }
  })
})
