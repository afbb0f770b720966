import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { startTestPlatform, type TestPlatform, testBackends } from '@earshot/test-kit/backends'
import { admin } from '@earshot/test-kit/calls'
import { allows, ROLE_NAMES, type Role } from '../access/roles.js'
import type { Permission } from '../http/permissions.js'
import { adminRoutes } from './admin-routes.js'

/*
 * Every admin route, called with every role's API key and with a key limited to one enterprise: each is
 * refused with 4031 exactly when the one permission table (access/roles.ts) says so, and an enterprise
 * outside a limited key's scope is unknown (4040). Ids name nothing (999999) unless the scope is the
 * point, so no call changes anything the next one depends on.
 */

const UNKNOWN = '999999'
const guarded = adminRoutes.filter((route) => !route.open)

interface Answer {
  status: number
  code: number | undefined
  msg: string
}

async function call(platform: TestPlatform, key: string, method: string, path: string): Promise<Answer> {
  const withBody = method !== 'GET' && method !== 'HEAD' && method !== 'DELETE'
  const response = await fetch(`${platform.adminUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(withBody && { 'content-type': 'application/json' }) },
    ...(withBody && { body: '{}' }),
  })
  const text = await response.text()
  const json = response.headers.get('content-type')?.startsWith('application/json')
  const body = (json ? JSON.parse(text) : {}) as { code?: number; msg?: string }
  return { status: response.status, code: body.code, msg: body.msg ?? '' }
}

function pathOf(path: string, enterpriseId: string): string {
  return path.replace(':enterpriseId', enterpriseId).replace(/:[A-Za-z]+/g, UNKNOWN)
}

async function createKey(platform: TestPlatform, role: Role, enterprises?: number[]): Promise<string> {
  const reply = await admin<{ key: string }>(platform, 'POST', '/keys', {
    name: `${role} ${enterprises ? 'limited' : 'key'}`,
    role,
    ...(enterprises && { enterprises }),
  })
  assert.equal(reply.status, 201, JSON.stringify(reply.body))
  return reply.body.key
}

for (const backend of testBackends) {
  describe(`every admin route with every role (${backend})`, { timeout: 180_000 }, () => {
    let platform: TestPlatform
    const keys = new Map<Role, string>()
    let limited: string
    let mine: number
    let other: number

    before(async () => {
      platform = await startTestPlatform(backend)
      for (const role of ROLE_NAMES) keys.set(role, await createKey(platform, role))
      mine = (await admin<{ enterpriseId: number }>(platform, 'POST', '/enterprises', { name: 'Mine' })).body
        .enterpriseId
      other = (await admin<{ enterpriseId: number }>(platform, 'POST', '/enterprises', { name: 'Other' }))
        .body.enterpriseId
      limited = await createKey(platform, 'admin', [mine])
    })
    after(() => platform?.stop())

    for (const role of ROLE_NAMES) {
      test(`${role}: refused 4031 exactly where the table says`, async () => {
        for (const route of guarded) {
          const permission = route.permission as Permission
          const answer = await call(
            platform,
            keys.get(role) as string,
            route.method,
            pathOf(route.path, UNKNOWN),
          )
          const where = `${role} ${route.method} ${route.path} (${permission}): ${answer.status} ${answer.msg}`
          assert.notEqual(answer.status, 401, where)
          if (allows(role, false, permission)) {
            assert.notEqual(answer.code, 4031, where)
          } else {
            assert.equal(answer.code, 4031, where)
            assert.match(answer.msg, new RegExp(permission.replace('.', '\\.')), where)
          }
        }
      })
    }

    test('a key limited to one enterprise: the others are unknown, in paths and in lists', async () => {
      for (const route of guarded) {
        const permission = route.permission as Permission
        if (!route.path.includes(':enterpriseId')) continue
        const answer = await call(platform, limited, route.method, pathOf(route.path, String(other)))
        const where = `${route.method} ${route.path}: ${answer.status} ${answer.msg}`
        if (!allows('admin', true, permission)) assert.equal(answer.code, 4031, where)
        else assert.deepEqual([answer.code, answer.msg], [4040, `no enterprise ${other}`], where)
      }
      for (const route of guarded.filter((candidate) => !candidate.path.includes(':enterpriseId'))) {
        const answer = await call(platform, limited, route.method, pathOf(route.path, UNKNOWN))
        const permission = route.permission as Permission
        const where = `${route.method} ${route.path}: ${answer.status} ${answer.msg}`
        assert.equal(answer.code === 4031, !allows('admin', true, permission), where)
      }
      const listed = await fetch(`${platform.adminUrl}/admin/v1/enterprises`, {
        headers: { authorization: `Bearer ${limited}` },
      })
      const { enterprises } = (await listed.json()) as { enterprises: { enterpriseId: number }[] }
      assert.deepEqual(
        enterprises.map((enterprise) => enterprise.enterpriseId),
        [mine],
      )
    })

    test('a refusal by role is a row of the audit trail', async () => {
      const viewer = keys.get('viewer') as string
      const refused = await call(platform, viewer, 'POST', `/admin/v1/enterprises/${mine}/rotate-key`)
      assert.equal(refused.code, 4031)
      const trail = await admin<{ rows: { operation: string; outcome: string; actor: { kind: string } }[] }>(
        platform,
        'GET',
        `/audit?enterprise=${mine}`,
      )
      assert.ok(
        trail.body.rows.some(
          (row) => row.operation === 'rotateKey' && row.outcome === 'refused' && row.actor.kind === 'key',
        ),
        JSON.stringify(trail.body.rows),
      )
    })
  })
}
