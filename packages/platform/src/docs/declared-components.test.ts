import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { component, componentOf, routeContract } from '@earshot/protocol'
import Type from 'typebox'
import { Compile } from 'typebox/compile'
import { declaredComponents } from './openapi.js'

/*
 * A schema declares itself a component where it is declared; the documents find it in their routes'
 * contracts. The declaration is invisible to the JSON Schema published and to validation.
 */

const Part = Type.Object({ partId: Type.Integer() }, component({ name: 'Part', description: 'A part.' }))
const Secret = Type.Object({ word: Type.String() }, component({ name: 'Secret', sealed: true }))
const Box = Type.Object(
  { parts: Type.Array(Part), spare: Type.Optional(Part) },
  { additionalProperties: false, ...component({ name: 'Box', plaintext: Secret }) },
)

const boxContract = routeContract({
  method: 'POST',
  path: '/boxes',
  operationId: 'putBox',
  tag: 'boxes',
  summary: 'Put a box',
  body: { json: Box },
  answer: { description: 'The part kept', payload: { json: Part } },
  refusals: [],
})

describe('declared components', { timeout: 10_000 }, () => {
  test('are found in contracts once each, those held first, an envelope before its plaintext', () => {
    const found = declaredComponents([boxContract, boxContract])
    assert.deepEqual(
      found.map(({ note }) => note.name),
      ['Part', 'Box', 'Secret'],
    )
    assert.equal(found[0]?.schema, Part)
    assert.deepEqual(found[0]?.note, { name: 'Part', description: 'A part.' })
  })

  test('leave the JSON Schema and its validation as they were', () => {
    assert.equal(JSON.stringify(Part), JSON.stringify(Type.Object({ partId: Type.Integer() })))
    assert.equal(componentOf(Part)?.name, 'Part')
    assert.ok(Compile(Box).Check({ parts: [{ partId: 1 }] }))
    assert.ok(!Compile(Box).Check({ parts: [], extra: 1 }))
  })

  test('two different schemas under one name are refused', () => {
    const Other = Type.Object({ partId: Type.String() }, component({ name: 'Part' }))
    assert.throws(
      () => declaredComponents([boxContract, { answer: { payload: { json: Other } } }]),
      /two different schemas declare the component Part/,
    )
  })
})
