import { EarshotClient } from '@earshot/partner'
import {
  type EnvelopeKey,
  type JsonObject,
  loadKey,
  open,
  type PartnerOperationSpec,
  seal,
} from '@earshot/protocol'
import type { BenchEnterprise } from './bench-server.js'
import type { PreparedRequest } from './load.js'

/**
 * What the platform benches share about partners: their client, their token, one raw sealed call, and
 * requests sealed beforehand. Everything outside a measured loop goes through the partner client; a
 * measured loop sends its sealed bodies itself, to the operation's method and path as the contracts give
 * them, so that the client's own work (validation, retries, parsing the answer) is not in the figure.
 */

let eventCounter = 0
/** A fresh eventId for every envelope a bench seals. */
export const eventId = () => `bench-${++eventCounter}`

/** An enterprise of the bench's data set, with its client, its key loaded and a token. */
export interface Partner extends BenchEnterprise {
  client: EarshotClient
  key: EnvelopeKey
  token: string
}

/** The partner client of an enterprise, on the platform's partner listener. */
export function partnerClient(
  partnerUrl: string,
  enterprise: Pick<BenchEnterprise, 'enterpriseId' | 'keyVersion' | 'secret'>,
): EarshotClient {
  const { enterpriseId, keyVersion, secret } = enterprise
  return new EarshotClient({ baseUrl: partnerUrl, enterpriseId, keyVersion, secret })
}

/** Every enterprise of the data set as a partner: its client, its key loaded and a token fetched. */
export async function partnersOf(partnerUrl: string, enterprises: BenchEnterprise[]): Promise<Partner[]> {
  const partners: Partner[] = []
  for (const enterprise of enterprises) {
    const client = partnerClient(partnerUrl, enterprise)
    partners.push({ ...enterprise, client, key: loadKey(enterprise.secret), token: await client.token() })
  }
  return partners
}

/**
 * One request of a bearer operation sealed here and sent as it is, for a loop that times it: its answer as
 * it came (code and data), refused or not.
 */
export async function sealedPost(
  partnerUrl: string,
  operation: PartnerOperationSpec,
  partner: Partner,
  plaintext: JsonObject,
): Promise<Reply> {
  const response = await fetch(`${partnerUrl}${operation.path}`, {
    method: operation.method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${partner.token}` },
    body: JSON.stringify(seal(partner.key, partner.keyVersion, eventId(), plaintext)),
  })
  return (await response.json()) as Reply
}

export interface Reply {
  code: number
  data?: unknown
}

/** The answer's sealed data opened; a refusal thrown. */
export function openedData<Data>(partner: Partner, operation: PartnerOperationSpec, reply: Reply): Data {
  if (reply.code !== 2000) throw new Error(`${operation.path} refused: ${JSON.stringify(reply)}`)
  return open(reply.data as Parameters<typeof open>[0], partner.key).plaintext as Data
}

/** Round robin over the partners: each request sealed under its enterprise's key, with its token. */
export function partnerRequests(
  partners: Partner[],
  build: (partner: Partner, n: number) => { plaintext: JsonObject; beside?: JsonObject; bearer: boolean },
): () => PreparedRequest {
  let n = 0
  return (): PreparedRequest => {
    const partner = partners[n % partners.length] as Partner
    const { plaintext, beside, bearer } = build(partner, Math.floor(n / partners.length))
    n++
    return {
      body: Buffer.from(
        JSON.stringify({ ...seal(partner.key, partner.keyVersion, eventId(), plaintext), ...beside }),
      ),
      headers: bearer ? { authorization: `Bearer ${partner.token}` } : ({} as Record<string, string>),
    }
  }
}
