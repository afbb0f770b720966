import dns from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import { InvalidParameterError } from '@earshot/protocol'
import ipaddr from 'ipaddr.js'
import { DEFAULT_PUSH_PORTS } from '../config/config.js'

/** The `code` of the error `guardedLookup` calls back with when it refuses an address. */
export const ADDRESS_REFUSED_CODE = 'EARSHOT_ADDRESS_REFUSED'

const MAX_URL_LENGTH = 2048
const PRIVATE_HINT =
  " (allowed only when the platform itself runs with EARSHOT_PUSH_ALLOW_PRIVATE=1, as npm start's demo does: a setting of the platform's environment, not of the CLI)"
const METADATA_HOSTS = new Set(['metadata.google.internal', 'metadata.goog', 'metadata'])

// Cloud metadata services at addresses that are otherwise link-local (AWS, GCP, Azure; ECS task
// metadata), carrier-grade NAT (Alibaba) or unique-local (AWS over IPv6): refused even with
// allowPrivate.
const METADATA_ADDRESSES = new Set(
  ['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::254'].map((a) =>
    ipaddr.parse(a).toNormalizedString(),
  ),
)

/** The ipaddr.js ranges a push may reach only with allowPrivate; of the rest only `unicast` is public. */
const PRIVATE_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'carrierGradeNat'])

/** IPv6 ranges whose last 32 bits are the IPv4 address actually reached, judged in its place. */
const EMBEDDING_RANGES = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052'])

// IANA's global unicast space: IPv6 outside it that ipaddr.js calls `unicast` (such as the deprecated
// IPv4-compatible ::a.b.c.d, or ::/8 and 4000::/2 generally) is unallocated, not a public address.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3')
// The well-known NAT64 prefix; the rest of rfc6052, the local-use 64:ff9b:1::/48, puts the IPv4
// address at a position only its operator knows.
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96')

const DESCRIPTIONS: Record<string, string> = {
  metadata: 'a cloud metadata address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  private: 'a private address',
  uniqueLocal: 'a unique-local address',
  carrierGradeNat: 'a carrier-grade NAT address',
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  multicast: 'a multicast address',
  reserved: 'a reserved address',
  benchmarking: 'a benchmarking address',
  rfc6052: 'a local-use NAT64 address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
  unallocated: 'an unallocated IPv6 address',
}

/** What the push address policy makes of one IP address. */
export interface AddressClass {
  /**
   * The ipaddr.js range (`unicast`, `private`, `linkLocal`, `6to4`, …) of the address, or of the IPv4
   * address it embeds; `metadata` for a cloud metadata address; `unallocated` for IPv6 outside
   * 2000::/3 that ipaddr.js calls unicast; `invalid` for what is not an IP address.
   */
  range: string
  /** `public`: may be pushed to; `private`: only with allowPrivate; `refused`: never. */
  verdict: 'public' | 'private' | 'refused'
  /** For IPv4-mapped, rfc6145 and well-known NAT64 IPv6 addresses: the IPv4 address judged instead. */
  embedded?: string
}

/** An address node takes (a zone index is ignored), or undefined; ipaddr.js alone reads more. */
function parse(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = address.replace(/%.*$/, '')
  const version = isIP(bare)
  if (version === 4) return ipaddr.IPv4.parse(bare)
  // ipaddr.js reads the IPv4-compatible ::a.b.c.d (as the C library writes ::/96) as the IPv4-mapped
  // ::ffff:a.b.c.d, so IPv6 goes through the WHATWG URL serializer first, which writes it in hex.
  const url = `http://[${bare}]/`
  if (version === 6 && URL.canParse(url)) return ipaddr.IPv6.parse(new URL(url).hostname.slice(1, -1))
  return undefined
}

/** Classifies an IP address (a zone index is ignored) for the push address policy. */
export function classifyAddress(address: string): AddressClass {
  const ip = parse(address)
  if (!ip) return { range: 'invalid', verdict: 'refused' }
  let range: string = ip.range()
  if (ip instanceof ipaddr.IPv6) {
    if (EMBEDDING_RANGES.has(range) && (range !== 'rfc6052' || ip.match(NAT64_WELL_KNOWN))) {
      const [high = 0, low = 0] = ip.parts.slice(-2)
      const embedded = `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`
      return { ...classifyAddress(embedded), embedded }
    }
    if (range === 'unicast' && !ip.match(GLOBAL_UNICAST_V6)) range = 'unallocated'
  }
  if (METADATA_ADDRESSES.has(ip.toNormalizedString())) range = 'metadata'
  if (range === 'unicast') return { range, verdict: 'public' }
  return { range, verdict: PRIVATE_RANGES.has(range) ? 'private' : 'refused' }
}

/** Why a push may not connect to this IP address, or undefined when it may. */
export function addressRefusal(address: string, allowPrivate: boolean): string | undefined {
  const { range, verdict, embedded } = classifyAddress(address)
  if (verdict === 'public' || (verdict === 'private' && allowPrivate)) return undefined
  if (range === 'invalid') return 'not an IP address'
  const description = DESCRIPTIONS[range] ?? `a special-purpose address (${range})`
  const hint = verdict === 'private' ? PRIVATE_HINT : ''
  return `${embedded ? `an IPv6 address embedding ${embedded}, ` : ''}${description}${hint}`
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

/** Whether a port is one of the ports and ranges (`1024-65535`) given, as config.ts validated them. */
function portAllowed(port: number, ports: readonly string[]): boolean {
  return ports.some((allowed) => {
    const [from = '', to = from] = allowed.split('-')
    return port >= Number(from) && port <= Number(to)
  })
}

/**
 * Validates a push URL set through the admin API and returns it normalised, or null for none.
 * A host name is resolved now too; `guardedLookup` checks again when connecting.
 */
export async function checkPushUrl(
  value: unknown,
  allowPrivate: boolean,
  lookup: (host: string) => Promise<string[]> = lookupAll,
  ports: readonly string[] = DEFAULT_PUSH_PORTS,
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
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  if (!portAllowed(port, ports)) {
    throw refuse(`must name a port pushes may use (EARSHOT_PUSH_PORTS: ${ports.join(',')}), not ${port}`)
  }

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
