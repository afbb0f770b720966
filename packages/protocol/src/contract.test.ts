import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, test } from 'node:test'
import { CONTRACT_COMMAND, contractText, partnerContract } from './contract.js'
import { errorCatalogue } from './error-catalogue.js'
import { EVENT_TYPES } from './event-type-names.js'
import { ChangeSchema, PushEventSchema } from './messages.js'
import { CHANGE_KINDS } from './partner-api.js'

const contractFile = new URL('../test-data/contract.json', import.meta.url)

/** The first line where two texts differ, both ways, for a message. */
function firstDifference(written: string, generated: string): string {
  const [a, b] = [written.split('\n'), generated.split('\n')]
  const line = a.findIndex((text, index) => text !== b[index])
  const at = line === -1 ? a.length : line
  return `line ${at + 1}: the file has ${JSON.stringify(a[at])}, the code ${JSON.stringify(b[at])}`
}

/** Every `const` a schema gives the property `name`, anywhere in it. */
function constantsOf(schema: unknown, name: string): string[] {
  if (typeof schema !== 'object' || schema === null) return []
  const own = (schema as { properties?: Record<string, { const?: unknown; anyOf?: unknown[] }> })
    .properties?.[name]
  const values = [own, ...(own?.anyOf ?? [])].flatMap((each) =>
    typeof (each as { const?: unknown })?.const === 'string' ? [(each as { const: string }).const] : [],
  )
  return [...values, ...Object.values(schema).flatMap((child) => constantsOf(child, name))]
}

describe('the partner contract file', () => {
  test('test-data/contract.json is what the code generates', () => {
    const written = readFileSync(contractFile, 'utf8')
    const generated = contractText()
    assert.ok(
      written === generated,
      `packages/protocol/test-data/contract.json differs from what packages/protocol/src generates ` +
        `(${firstDifference(written, generated)}): run \`${CONTRACT_COMMAND}\` and commit the file`,
    )
  })

  test('its event types are those the push schema accepts, each once', () => {
    assert.deepEqual(new Set(EVENT_TYPES), new Set(constantsOf(PushEventSchema, 'eventType')))
    assert.equal(new Set(EVENT_TYPES).size, EVENT_TYPES.length)
  })

  test('its change types are those a change may have', () => {
    assert.deepEqual(new Set(CHANGE_KINDS), new Set(constantsOf(ChangeSchema, 'change')))
  })

  test('it holds every code of the catalogue, with its HTTP status', () => {
    const { codes } = partnerContract()
    assert.deepEqual(
      codes.map(({ code, name, httpStatus }) => [code, name, httpStatus]),
      [...errorCatalogue.values()].map(({ code, name, httpStatus }) => [code, name, httpStatus]),
    )
  })

  test('every operation names messages the file holds', () => {
    const { operations, messages } = partnerContract()
    for (const [id, operation] of Object.entries(operations)) {
      for (const name of [operation.body, operation.plaintext, operation.answer]) {
        if (name !== null) assert.ok(name in messages, `${id} names ${name}, not in messages`)
      }
    }
  })
})
