import assert from 'node:assert/strict'
import type { RunningPlatform } from '@earshot/platform'

/** A platform started with the break-glass key, which the tests' admin calls present. */
type KeyedPlatform = RunningPlatform & { adminToken: string }

import {
  type AdminAnswer,
  AdminApiError,
  type AdminBody,
  type AdminOperationId,
  type AdminRequestArgs,
} from '@earshot/platform/admin-client'
import { type EnvelopeKey, httpStatusOf, type JsonObject, loadKey, open, seal } from '@earshot/protocol'
import { adminClientOf } from './fault-kit.js'

export interface Reply {
  status: number
  headers: Headers
  body: { code: number; msg?: string; requestId?: string; data?: unknown; [key: string]: unknown }
}

/** A raw POST to the partner API, with whatever body and headers a test wants. */
export async function postRaw(
  platform: KeyedPlatform,
  path: string,
  body: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<Reply> {
  const response = await fetch(`${platform.partnerUrl}${path}`, { method: 'POST', headers, body })
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Reply['body'],
  }
}

export function postJson(
  platform: KeyedPlatform,
  path: string,
  body: unknown,
  token?: string,
): Promise<Reply> {
  return postRaw(platform, path, JSON.stringify(body), {
    'content-type': 'application/json',
    ...(token && { authorization: `Bearer ${token}` }),
  })
}

/**
 * Calls an admin operation by its operationId through the admin client, typed by the operation's contract:
 * resolves with its answer, rejects with the AdminApiError it was refused with.
 */
export function adminCall<Id extends AdminOperationId>(
  platform: KeyedPlatform,
  operationId: Id,
  ...request: AdminRequestArgs<Id>
): Promise<AdminAnswer<Id>> {
  return adminClientOf(platform).call(operationId, ...request)
}

/** An admin call's answer with the HTTP status of its success, for a test that holds that status (201). */
export async function adminReply<Id extends AdminOperationId>(
  platform: KeyedPlatform,
  operationId: Id,
  ...request: AdminRequestArgs<Id>
): Promise<{ status: number; body: AdminAnswer<Id> }> {
  const client = adminClientOf(platform)
  const response = await client.send(operationId, ...request)
  return { status: response.status, body: await client.answer(operationId, response) }
}

/** The refusal of an admin call that must be refused: its code, msg and HTTP status. */
export async function adminRefusal<Id extends AdminOperationId>(
  platform: KeyedPlatform,
  operationId: Id,
  ...request: AdminRequestArgs<Id>
): Promise<AdminApiError> {
  const answer = await adminCall(platform, operationId, ...request).catch((error: unknown) => {
    if (error instanceof AdminApiError) return error
    throw error
  })
  if (answer instanceof AdminApiError) return answer
  assert.fail(`${operationId} was answered, not refused: ${JSON.stringify(answer)}`)
}

/**
 * An admin API call with the platform's admin token, answered as it came: for tests of the HTTP surface
 * itself (a path, method or body no operation's contract allows). Everything else calls adminCall.
 */
export async function admin<T = JsonObject>(
  platform: KeyedPlatform,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${platform.adminUrl}/admin/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${platform.adminToken}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  })
  return { status: response.status, body: (await response.json()) as T }
}

/** A partner as the tests see it: credentials, and helpers that seal every request afresh. */
export interface TestPartner {
  enterpriseId: number
  keyVersion: number
  secret: string
  key: EnvelopeKey
  token(): Promise<string>
  /** Seals the plaintext, sends it with the token, and opens the response data when there is some. */
  call(path: string, plaintext: JsonObject, token?: string): Promise<Reply & { plaintext?: JsonObject }>
}

let eventCounter = 0

export async function createPartner(platform: KeyedPlatform, name = 'Acme'): Promise<TestPartner> {
  return partnerFor(platform, await adminClientOf(platform).createEnterprise(name))
}

export function partnerFor(
  platform: KeyedPlatform,
  credentials: { enterpriseId: number; keyVersion: number; secret: string },
): TestPartner {
  const key = loadKey(credentials.secret)
  const partner: TestPartner = {
    ...credentials,
    key,
    async token() {
      const reply = await postJson(platform, '/openapi/v1/token', {
        ...seal(key, credentials.keyVersion, `evt-token-${++eventCounter}`, {}),
        enterpriseId: credentials.enterpriseId,
      })
      if (reply.body.code !== 2000) throw new Error(`token refused: ${JSON.stringify(reply.body)}`)
      return (reply.body.data as { accessToken: string }).accessToken
    },
    async call(path, plaintext, token) {
      const reply = await postJson(
        platform,
        path,
        seal(key, credentials.keyVersion, `evt-${++eventCounter}`, plaintext),
        token ?? (await partner.token()),
      )
      const data = reply.body.data
      return data && typeof data === 'object' && 'ciphertext' in data
        ? { ...reply, plaintext: open(data, key).plaintext }
        : reply
    },
  }
  return partner
}

/** Ingests a recording through the admin API and returns its audioId. */
export async function ingest(
  platform: KeyedPlatform,
  enterpriseId: number,
  recording: JsonObject,
): Promise<string> {
  // Unchecked: tests ingest what the API may refuse.
  const stored = await adminClientOf(platform).call('ingestRecording', {
    params: { enterpriseId },
    body: recording as AdminBody<'ingestRecording'>,
  })
  return stored.audioId
}

/** Asserts a reply carries the catalogue code, its HTTP status, a msg and the request id. */
export function expectCode(reply: Reply, code: number): void {
  assert.equal(reply.body.code, code, JSON.stringify(reply.body))
  assert.equal(reply.status, httpStatusOf(code))
  assert.equal(typeof reply.body.msg, 'string')
  assert.ok((reply.body.msg as string).length > 0)
  assert.equal(typeof reply.body.requestId, 'string')
  assert.ok((reply.body.requestId as string).length > 0)
  assert.equal(reply.headers.get('x-request-id'), reply.body.requestId)
}
