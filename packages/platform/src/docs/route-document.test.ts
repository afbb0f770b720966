import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ResponseCode } from '@earshot/protocol'
import Type from 'typebox'
import type { RouteSpec } from '../http/route-spec.js'
import { Components, type Json } from './openapi.js'
import { documentPaths } from './route-document.js'

/* A route declared as data is in the document made from its listener's list, as it declares itself. */

const Widget = Type.Object({ widgetId: Type.Integer({ minimum: 1 }), label: Type.String() })

const widgetRoute: RouteSpec<unknown> = {
  method: 'PUT',
  path: '/admin/v1/widgets/:widgetId',
  operationId: 'putWidget',
  tag: 'widgets',
  summary: 'Put a widget',
  params: Type.Object({ widgetId: Type.Integer({ minimum: 1, description: 'the widget' }) }),
  query: Type.Object({ dryRun: Type.Optional(Type.String({ description: 'only check' })) }),
  body: { json: Widget },
  answer: { status: 201, description: 'Stored', payload: { json: Widget } },
  refusals: [ResponseCode.INVALID_PARAMETER, ResponseCode.NOT_FOUND],
  handle: () => async () => ({}),
}

describe('documents made from routes', { timeout: 10_000 }, () => {
  test('a route is an operation with its parameters, bodies, answer and refusals', () => {
    const components = new Components()
    components.name('Widget', Widget)
    const paths = documentPaths([widgetRoute], {
      components,
      securityScheme: 'adminToken',
      everyRoute: [ResponseCode.UNAUTHORIZED],
    })
    const operation = (paths['/admin/v1/widgets/{widgetId}'] as Json).put as Json
    assert.equal(operation.operationId, 'putWidget')
    assert.deepEqual(operation.security, [{ adminToken: [] }])
    assert.deepEqual(operation.parameters, [
      {
        name: 'widgetId',
        in: 'path',
        required: true,
        description: 'the widget',
        schema: { type: 'integer', minimum: 1 },
      },
      { name: 'dryRun', in: 'query', required: false, description: 'only check', schema: { type: 'string' } },
    ])
    const widgetRef = { $ref: '#/components/schemas/Widget' }
    assert.deepEqual(operation.requestBody, {
      required: true,
      content: { 'application/json': { schema: widgetRef } },
    })
    const responses = operation.responses as Record<string, Json>
    assert.deepEqual(Object.keys(responses), ['201', '400', '401', '404'])
    assert.deepEqual(responses['201']?.content, { 'application/json': { schema: widgetRef } })
    assert.match(responses['400']?.description as string, /^4001 INVALID_PARAMETER/)
    assert.match(responses['404']?.description as string, /^4040 NOT_FOUND/)
  })

  test('an open route needs no credentials', () => {
    const paths = documentPaths([{ ...widgetRoute, open: true }], {
      components: new Components(),
      securityScheme: 'adminToken',
      everyRoute: [],
    })
    assert.deepEqual(((paths['/admin/v1/widgets/{widgetId}'] as Json).put as Json).security, [])
  })
})
