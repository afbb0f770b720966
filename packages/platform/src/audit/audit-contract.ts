import { component, ResponseCode, RULE, routeContract } from '@earshot/protocol'
import Type from 'typebox'

/* The audit trail, read: a filtered page, the chain's verification, and every row as JSON Lines. */

export const ActorSchema = Type.Object({
  kind: Type.Enum(['operator', 'key', 'partner', 'platform', 'break-glass']),
  id: Type.String(),
  name: Type.String(),
})

export const AuditRowSchema = Type.Object(
  {
    seq: Type.Integer({ minimum: 1, description: 'its place in the chain' }),
    at: Type.String({ description: 'when; ISO-8601 UTC with milliseconds' }),
    actor: ActorSchema,
    operation: Type.String({
      description: "the route's operationId, or the platform's own action (audit.prune)",
    }),
    target: Type.Record(Type.String(), Type.Union([Type.String(), Type.Integer()]), {
      description: 'the ids concerned: enterpriseId, audioId, endpointId, deliveryId, keyId, operatorId',
    }),
    before: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    after: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
      description: "the fields given (a recording's: their names only; secrets never)",
    }),
    address: Type.Union([Type.String(), Type.Null()]),
    userAgent: Type.Union([Type.String(), Type.Null()]),
    outcome: Type.Enum(['ok', 'refused']),
    prevHash: Type.String(),
    hash: Type.String({ description: 'SHA-256 of the row (prevHash included) as canonical JSON' }),
  },
  component({ name: 'AuditRow', description: 'One change, sign-in or refusal in the audit trail.' }),
)

const Id = Type.String({ pattern: '^[1-9][0-9]{0,14}$', [RULE]: 'must be a positive integer' })

export const AuditQuerySchema = Type.Object(
  {
    actor: Type.Optional(
      Type.String({ maxLength: 400, description: "an actor's id (operator:3, key:7, break-glass)" }),
    ),
    enterprise: Type.Optional(Id),
    since: Type.Optional(
      Type.String({
        format: 'date-time',
        description: 'rows at or after this time',
        [RULE]: 'must be an ISO-8601 time',
      }),
    ),
    before: Type.Optional(
      Type.String({ ...Id, description: "rows before this seq: the previous page's last" }),
    ),
    limit: Type.Optional(
      Type.String({
        pattern: '^[1-9][0-9]{0,3}$',
        description: 'rows per page, 1 to 1000 (100)',
        [RULE]: 'must be from 1 to 1000',
      }),
    ),
  },
  { additionalProperties: false },
)

export const listAuditContract = routeContract({
  method: 'GET',
  path: '/admin/v1/audit',
  operationId: 'listAudit',
  tag: 'audit',
  summary: 'The audit trail, newest first, filtered by actor, enterprise and time',
  query: AuditQuerySchema,
  answer: {
    description: 'A page of rows',
    payload: { json: Type.Object({ rows: Type.Array(AuditRowSchema) }) },
  },
  refusals: [ResponseCode.INVALID_PARAMETER],
  permission: 'audit.read',
})

export const verifyAuditContract = routeContract({
  method: 'GET',
  path: '/admin/v1/audit/verify',
  operationId: 'verifyAudit',
  tag: 'audit',
  summary: "Check the audit trail's hash chain from its anchor: a row changed or removed is found",
  answer: {
    description: 'The verification',
    payload: {
      json: Type.Object({
        ok: Type.Boolean(),
        checked: Type.Integer({ minimum: 0 }),
        firstBad: Type.Optional(Type.Integer({ minimum: 0, description: 'the seq where the chain breaks' })),
      }),
    },
  },
  refusals: [],
  permission: 'audit.read',
})

export const exportAuditContract = routeContract({
  method: 'GET',
  path: '/admin/v1/audit/export',
  operationId: 'exportAudit',
  tag: 'audit',
  summary: 'Every row of the audit trail, oldest first, as JSON Lines',
  answer: {
    description: 'One AuditRow per line',
    payload: { lines: AuditRowSchema, types: ['application/x-ndjson'] },
  },
  refusals: [],
  permission: 'audit.read',
})
