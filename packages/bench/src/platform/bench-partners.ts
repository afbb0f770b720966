import { type EnvelopeKey, type JsonObject, loadKey, seal } from '@earshot/protocol'
import type { BenchEnterprise } from './bench-server.js'
import type { PreparedRequest } from './load.js'

/** What the platform benches share about partners: their token, one call, and requests sealed beforehand. */

let eventCounter = 0
/** A fresh eventId for every envelope a bench seals. */
export const eventId = () => `bench-${++eventCounter}`

/** An enterprise of the bench's data set, with its key loaded and a token. */
export interface Partner extends BenchEnterprise {
  key: EnvelopeKey
  token: string
}

export async function postJson(url: string, body: unknown, token?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  })
  return { status: response.status, body: (await response.json()) as { code: number; data?: unknown } }
}

export async function tokenFor(
  partnerUrl: string,
  enterprise: BenchEnterprise,
  key: EnvelopeKey,
): Promise<string> {
  const reply = await postJson(`${partnerUrl}/openapi/v1/token`, {
    ...seal(key, enterprise.keyVersion, eventId(), {}),
    enterpriseId: enterprise.enterpriseId,
  })
  if (reply.body.code !== 2000) throw new Error(`token refused: ${JSON.stringify(reply.body)}`)
  return (reply.body.data as { accessToken: string }).accessToken
}

/** Every enterprise of the data set as a partner: its key loaded and a token fetched. */
export async function partnersOf(partnerUrl: string, enterprises: BenchEnterprise[]): Promise<Partner[]> {
  const partners: Partner[] = []
  for (const enterprise of enterprises) {
    const key = loadKey(enterprise.secret)
    partners.push({ ...enterprise, key, token: await tokenFor(partnerUrl, enterprise, key) })
  }
  return partners
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
