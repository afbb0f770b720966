import assert from 'node:assert/strict'
import { test } from 'node:test'
import { routeContract } from '@earshot/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'
import Type from 'typebox'
import { defineRoute, type RouteSpec } from './route-spec.js'

/*
 * A handler answers what its contract's schema says, or the build fails: the `@ts-expect-error` lines
 * below compile only while tsc refuses what follows them.
 */

const thingContract = routeContract({
  method: 'POST',
  path: '/things',
  operationId: 'createThing',
  tag: 'things',
  summary: 'Create a thing',
  answer: {
    status: 201,
    description: 'Created',
    payload: { json: Type.Object({ thingId: Type.Integer(), name: Type.String() }) },
  },
  refusals: [],
})

// @ts-expect-error: an answer without thingId, with a field the schema does not have
defineRoute(thingContract, () => async () => ({ name: 'lamp', colour: 'red' }))
// @ts-expect-error: thingId as text where the schema says an integer
defineRoute(thingContract, () => async () => ({ thingId: '1', name: 'lamp' }))
// @ts-expect-error: sent on the reply, off-schema all the same
defineRoute(thingContract, () => async (_request, reply) => reply.send({ thing: 1 }))

const thingRoute: RouteSpec<{ nextId: number }> = defineRoute(
  thingContract,
  (env: { nextId: number }) => async () => ({ thingId: env.nextId, name: 'lamp' }),
)

test('a route answers what its contract says, with the status the contract gives', async () => {
  let status = 200
  const reply = {
    code(code: number) {
      status = code
      return reply
    },
  } as unknown as FastifyReply
  const answer = await thingRoute.handle({ nextId: 7 })({} as FastifyRequest, reply)
  assert.deepEqual(answer, { thingId: 7, name: 'lamp' })
  assert.equal(status, 201)
  assert.equal(thingRoute.path, '/things')
  assert.equal(thingRoute.operationId, 'createThing')
})
