import assert from 'node:assert/strict'
import { test } from 'node:test'
import { routeContract } from '@earshot/protocol'
import type { FastifyReply, FastifyRequest } from 'fastify'
import Type from 'typebox'
import { type OpenedRequest, replySealed } from '../auth/envelope-request.js'
import { replyResult } from './partner-result.js'
import { defineRoute, type RouteSpec } from './route-spec.js'

/*
 * A handler answers what its contract's schema says, or the build fails: the `@ts-expect-error` lines
 * below compile only while tsc refuses what follows them. A partner result, sealed or not, is checked too.
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

const ThingSchema = Type.Object({ thingId: Type.Integer(), name: Type.String() })
const sealedThingContract = routeContract({
  method: 'POST',
  path: '/things/read',
  operationId: 'readThing',
  tag: 'things',
  summary: 'Read a thing, sealed',
  body: { sealed: Type.Object({}) },
  answer: { description: 'The thing, sealed', payload: { result: ThingSchema, sealed: true } },
  refusals: [],
})
const clearThingContract = routeContract({
  ...sealedThingContract,
  operationId: 'readThingInTheClear',
  answer: { description: 'The thing', payload: { result: ThingSchema, sealed: false } },
})
const opened = {} as OpenedRequest

defineRoute(
  sealedThingContract,
  () => async (request, reply) =>
    // @ts-expect-error: a sealed thingId as text where the schema says an integer
    replySealed(request, reply, opened, { thingId: '1', name: 'lamp' }),
)
defineRoute(
  sealedThingContract,
  () => async (request, reply) =>
    // @ts-expect-error: a sealed answer without the name its schema requires
    replySealed(request, reply, opened, { thingId: 1 }),
)
defineRoute(
  sealedThingContract,
  () => async (request, reply) =>
    // @ts-expect-error: a sealed answer with a field its schema does not have
    replySealed(request, reply, opened, { thingId: 1, name: 'lamp', colour: 'red' }),
)
defineRoute(
  sealedThingContract,
  // @ts-expect-error: answered in the clear where the contract says sealed
  () => async (request, reply) => replyResult(request, reply, { thingId: 1, name: 'lamp' }),
)
// @ts-expect-error: sent on the reply, past the seal
defineRoute(sealedThingContract, () => async (_request, reply) => reply.send({ thingId: 1, name: 'lamp' }))
defineRoute(
  clearThingContract,
  () => async (request, reply) =>
    // @ts-expect-error: the token's kind of answer, thingId as text
    replyResult(request, reply, { thingId: '1', name: 'lamp' }),
)
defineRoute(
  clearThingContract,
  // @ts-expect-error: sealed where the contract says in the clear
  () => async (request, reply) => replySealed(request, reply, opened, { thingId: 1, name: 'lamp' }),
)
// As the contracts say, they compile.
defineRoute(
  sealedThingContract,
  () => async (request, reply) => replySealed(request, reply, opened, { thingId: 1, name: 'lamp' }),
)
defineRoute(
  clearThingContract,
  () => async (request, reply) => replyResult(request, reply, { thingId: 1, name: 'lamp' }),
)

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
