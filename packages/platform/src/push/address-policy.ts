import dns from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import { InvalidParameterError } from '@earshot/protocol'

/** The `code` of the error `guardedLookup` calls back with when it refuses an address. */
export const ADDRESS_REFUSED_CODE = 'EARSHOT_ADDRESS_REFUSED'

const MAX_URL_LENGTH = 2048
const PRIVATE_HINT = '(set EARSHOT_PUSH_ALLOW_PRIVATE=1 to allow it)'
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata'])

type Rule = { reason: string; always: boolean; list: BlockList }

function rule(reason: string, always: boolean, ranges: string[]): Rule {
  const list = new BlockList()
  for (const range of ranges) {
    const [address = '', prefix] = range.split('/')
    const type = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (prefix === undefined) list.addAddress(address, type)
    else list.addSubnet(address, Number(prefix), type)
  }
  return { reason, always, list }
}

// The first rule that matches decides, so the metadata addresses come before the link-local, CGNAT
// and unique-local ranges that contain them. IPv4 rules also match IPv4-mapped IPv6 addresses.
const RULES: Rule[] = [
  rule('a cloud metadata address', true, [
    '169.254.169.254',
    '169.254.170.2',
    '100.100.100.200',
    'fd00:ec2::254',
  ]),
  rule('a link-local address', true, ['169.254.0.0/16', 'fe80::/10']),
  rule(`a loopback address ${PRIVATE_HINT}`, false, ['127.0.0.0/8', '::1']),
  rule('an unspecified address', true, ['0.0.0.0/8', '::']),
  // IPv4-compatible IPv6 (deprecated; ::1 and :: are decided above).
  rule('a reserved address', true, ['240.0.0.0/4', '::/96']),
  rule('a multicast address', true, ['224.0.0.0/4', 'ff00::/8']),
  rule(`a private address ${PRIVATE_HINT}`, false, [
    '10.0.0.0/8',
    '172.16.0.0/12',
    '192.168.0.0/16',
    '100.64.0.0/10',
    '198.18.0.0/15',
    'fc00::/7',
  ]),
]

/** Why a push may not connect to this IP address, or undefined when it may. */
export function addressRefusal(address: string, allowPrivate: boolean): string | undefined {
  const version = isIP(address)
  if (version === 0) return 'not an IP address'
  const type = version === 6 ? 'ipv6' : 'ipv4'
  const match = RULES.find((r) => r.list.check(address, type))
  if (match && (match.always || !allowPrivate)) return match.reason
  return undefined
}

/** The URL's host without IPv6 brackets, lower case and without a trailing dot. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '')
}

/**
 * Why a push to this URL must not connect when its host is an IP literal or a metadata host name,
 * checked before connecting because node does not call `lookup` for IP literals.
 */
export function hostLiteralRefusal(url: URL, allowPrivate: boolean): string | undefined {
  const host = bareHost(url)
  if (METADATA_HOSTS.has(host)) return 'a cloud metadata host'
  return isIP(host) ? addressRefusal(host, allowPrivate) : undefined
}

async function lookupAll(host: string): Promise<string[]> {
  const addresses = await dns.promises.lookup(host, { all: true, verbatim: true })
  return addresses.map((a) => a.address)
}

/**
 * Validates a push URL set through the admin API and returns it normalised, or null for none.
 * A host name is resolved now too; `guardedLookup` checks again when connecting.
 */
export async function checkPushUrl(
  value: unknown,
  allowPrivate: boolean,
  lookup: (host: string) => Promise<string[]> = lookupAll,
): Promise<string | null> {
  if (value === undefined || value === null) return null
  const refuse = (rule: string) => new InvalidParameterError('pushUrl', rule)
  if (typeof value !== 'string' || !URL.canParse(value)) {
    throw refuse('must be an absolute http:// or https:// URL, or null')
  }
  if (value.length > MAX_URL_LENGTH) throw refuse(`must be at most ${MAX_URL_LENGTH} characters`)
  const url = new URL(value)
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname) {
    throw refuse('must be an absolute http:// or https:// URL, or null')
  }
  if (url.username || url.password) throw refuse('must not contain credentials')

  const host = bareHost(url)
  const literal = hostLiteralRefusal(url, allowPrivate)
  if (literal) throw refuse(`${host} is ${literal}`)
  if (isIP(host) || METADATA_HOSTS.has(host)) return url.href

  let addresses: string[]
  try {
    addresses = await lookup(host)
  } catch {
    addresses = []
  }
  if (addresses.length === 0) throw refuse(`${host} does not resolve`)
  for (const address of addresses) {
    const reason = addressRefusal(address, allowPrivate)
    if (reason) throw refuse(`${host} resolves to ${address}, ${reason}`)
  }
  return url.href
}

/**
 * A `lookup` for undici's `connect` options and net/tls connect that refuses a host name resolving
 * to a refused address at connect time, so a name re-pointed after `checkPushUrl` (DNS rebinding)
 * cannot reach one.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '')
      for (const { address } of addresses) {
        const reason = addressRefusal(address, allowPrivate)
        if (reason) {
          const refused: NodeJS.ErrnoException = new Error(`push address ${address} refused: ${reason}`)
          refused.code = ADDRESS_REFUSED_CODE
          return callback(refused, '')
        }
      }
      const first = addresses[0]
      if (options.all) callback(null, addresses)
      else if (first) callback(null, first.address, first.family)
      else callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '')
    })
  }
}
