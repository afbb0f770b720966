import type { Static, TSchema } from 'typebox'
import { ChangeKind, EnvelopeSchema, TokenPlaintextSchema } from './messages.js'
import { issueTokenContract, partnerContracts } from './partner-contracts.js'
import type { Method, RouteContract } from './route-contract.js'
import { AT_MOST_ONCE } from './self-service-contracts.js'

/*
 * The partner API's vocabulary besides the messages: its operations and the headers of a push (its
 * limits are in partner-limits.ts). The platform serves these operations, the kits call them, and
 * contract.ts writes all of it to test-data/contract.json for the kits in other languages.
 */

/** Every kind of change the change feed reports. */
export const CHANGE_KINDS: readonly ChangeKind[] = Object.values(ChangeKind)

/**
 * How a caller proves who it is: `secret` seals the request with the enterprise's key, `bearer` adds a
 * token to a sealed request, `link` is a signed media link that is its own credential.
 */
export type PartnerCredentials = 'secret' | 'bearer' | 'link'

export interface PartnerOperationSpec {
  readonly method: Method
  readonly path: string
  readonly credentials: PartnerCredentials
  /** The request body's schema when it is not an envelope alone. */
  readonly body?: TSchema
  /** What the request's envelope holds. */
  readonly plaintext?: TSchema
  /** What the answer's `data` holds (sealed in an envelope when `sealedAnswer`); none when absent. */
  readonly answer?: TSchema
  readonly sealedAnswer?: boolean
  /** Sent again only after a refusal that shows nothing was done (AT_MOST_ONCE). */
  readonly atMostOnce: boolean
}

/** An operation as the kits see it, read from its route's contract, with how its caller authenticates. */
function operationOf(contract: RouteContract, credentials: PartnerCredentials): PartnerOperationSpec {
  const { method, path, body, answer } = contract
  const request =
    body && 'sealed' in body
      ? { body: EnvelopeSchema, plaintext: body.sealed }
      : body && 'json' in body
        ? { body: body.json as TSchema }
        : {}
  const result = answer.payload && 'result' in answer.payload ? answer.payload : undefined
  return {
    method,
    path,
    credentials,
    ...request,
    ...(result?.result && { answer: result.result, sealedAnswer: result.sealed }),
    atMostOnce: AT_MOST_ONCE.has(contract),
  }
}

/** How a route's caller proves who it is, read from its contract: a sealed request rides on a token. */
function credentialsOf(contract: RouteContract): PartnerCredentials {
  if (contract.body && 'sealed' in contract.body) return 'bearer'
  return contract.body ? 'secret' : 'link'
}

type PartnerContract = (typeof partnerContracts)[number]

/**
 * The partner API's operations by operationId, as the platform's partner routes serve them: every contract
 * of `partnerContracts`. The token request's envelope is checked by hand (an enterpriseId beside it): its
 * plaintext is named here.
 */
export const PartnerOperation = Object.fromEntries(
  partnerContracts.map((contract) => {
    const operation = operationOf(contract, credentialsOf(contract))
    const withPlaintext =
      contract === issueTokenContract ? { ...operation, plaintext: TokenPlaintextSchema } : operation
    return [contract.operationId, withPlaintext]
  }),
) as { readonly [C in PartnerContract as C['operationId']]: PartnerOperationSpec }
export type PartnerOperationId = keyof typeof PartnerOperation

/** The header naming a push's eventId, beside the envelope that holds it. */
export const PUSH_EVENT_ID_HEADER = 'x-earshot-event-id'

/**
 * The receiver check's pushes carry the header `X-Earshot-Check: 1` and audioIds beginning `check_`, a
 * prefix no recording may have. A push is a check push only with both, and only once it opened with the
 * enterprise's key: a receiver answers it without storing it, so neither a forged header nor a recording
 * that happens to be named alike can make one skip real data.
 */
export const CHECK_HEADER = 'x-earshot-check'
export const CHECK_AUDIO_ID_PREFIX = 'check_'

/** Whether an opened push is the receiver check's: its X-Earshot-Check header value, and its audioId. */
export function isCheckPush(checkHeader: string | readonly string[] | undefined, audioId: string): boolean {
  const value = Array.isArray(checkHeader) ? checkHeader[0] : checkHeader
  return value === '1' && audioId.startsWith(CHECK_AUDIO_ID_PREFIX)
}

type ContractById = { [C in (typeof partnerContracts)[number] as C['operationId']]: C }

/** The operations a bearer token calls with a sealed request: every partner route but the token's and the media's. */
export type SealedOperationId = {
  [Id in keyof ContractById]: ContractById[Id] extends { body: { sealed: TSchema } } ? Id : never
}[keyof ContractById]

/** What a sealed operation's request envelope holds (issuedAt is added when it is sealed). */
export type SealedPlaintextOf<Id extends SealedOperationId> = ContractById[Id] extends {
  body: { sealed: infer S extends TSchema }
}
  ? Omit<Static<S>, 'issuedAt'>
  : never

/** What a sealed operation's answer data holds; undefined for an answer without data. */
export type SealedResultOf<Id extends SealedOperationId> = ContractById[Id]['answer']['payload'] extends {
  result: infer S extends TSchema
}
  ? Static<S>
  : undefined

/** A sealed operation's contract, by operationId. */
export function sealedOperation(operationId: SealedOperationId): SealedOperation {
  const contract = partnerContracts.find((each) => each.operationId === operationId)
  if (!contract || !('body' in contract) || !('sealed' in contract.body)) {
    throw new Error(`no sealed partner operation ${operationId}`)
  }
  const payload = contract.answer.payload as { result: TSchema | null; sealed: boolean }
  return {
    path: contract.path,
    plaintext: contract.body.sealed,
    result: payload.result,
    sealedResult: payload.sealed,
  }
}

/** What calling a sealed operation needs: where, what its envelope holds, what its answer's data holds. */
export interface SealedOperation {
  path: string
  plaintext: TSchema
  /** Null for an answer without data. */
  result: TSchema | null
  sealedResult: boolean
}
