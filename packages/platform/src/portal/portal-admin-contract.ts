import {
  component,
  messageParser,
  PORTAL_ACCESS,
  PortalLinkSchema,
  ResponseCode,
  RULE,
  routeContract,
} from '@earshot/protocol'
import Type, { type Static } from 'typebox'
import { WITH_BODY, WITH_ID } from '../http/admin-refusals.js'
import { type Holds, Id, NullableTime, type Same, Time } from '../http/answer-fields.js'
import type { PortalSessionRow } from './portal-sessions.js'

/*
 * The operators' side of the partner portal: links into an enterprise's portal (for its partner, or an
 * operator's own read-only look), and the portal sessions, listed and ended.
 */

const EnterpriseParams = Type.Object({
  enterpriseId: Type.Integer({ minimum: 1, description: 'the enterprise' }),
})

const NewPortalLinkSchema = Type.Object(
  {
    access: Type.Optional(
      Type.Enum(PORTAL_ACCESS, {
        description:
          'view (the default) reads only; manage may also change endpoints, replay and rotate the key',
        [RULE]: `must be one of ${PORTAL_ACCESS.join(', ')}`,
      }),
    ),
  },
  {
    additionalProperties: false,
    ...component({ name: 'NewPortalLink', description: 'A link for a partner.' }),
  },
)
export const NewPortalLink = messageParser(NewPortalLinkSchema)

const PortalLinkAnswer = Type.Object(PortalLinkSchema.properties, {
  description: 'A one-time link into the portal: open it once, before expiresAt',
})

export const createPortalLinkContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/portal/links',
  operationId: 'createPortalLink',
  tag: 'portal',
  summary: "Mint a one-time link into an enterprise's partner portal, for its partner",
  description:
    'The link opens a portal session for this enterprise (view or manage) once, within EARSHOT_PORTAL_LINK_TTL; hand it to the partner. A manage session may rotate the key and be shown the new secret. 4030 for a disabled enterprise.',
  params: EnterpriseParams,
  body: { json: NewPortalLinkSchema },
  answer: { status: 201, description: 'Minted', payload: { json: PortalLinkAnswer } },
  refusals: [...WITH_BODY, ResponseCode.NOT_FOUND, ResponseCode.FORBIDDEN],
  permission: 'portal.manage',
})

export const createOperatorViewContract = routeContract({
  method: 'POST',
  path: '/admin/v1/enterprises/:enterpriseId/portal/operator-view',
  operationId: 'createOperatorViewLink',
  tag: 'portal',
  summary: "Mint a one-time link to see what an enterprise's partner sees in its portal, read-only",
  description:
    "An operator's own look: the session reads as a view session does and changes nothing (4031), whatever it is asked. 4030 for a disabled enterprise.",
  params: EnterpriseParams,
  answer: { status: 201, description: 'Minted', payload: { json: PortalLinkAnswer } },
  refusals: [...WITH_ID, ResponseCode.FORBIDDEN],
  permission: 'portal.view',
})

const PortalSessionRowSchema = Type.Object(
  {
    sessionId: Id('the session'),
    enterpriseId: Id('its enterprise'),
    access: Type.Enum(PORTAL_ACCESS),
    operatorView: Type.Boolean({ description: "an operator's read-only look" }),
    mintedBy: Type.String({ description: 'who minted its link, as the audit trail names them' }),
    createdAt: Time('when its link was opened'),
    lastSeenAt: Time('its last request (written at most once a minute)'),
    expiresAt: Time('when it stops working'),
    endedAt: NullableTime('when it was signed out or ended; null while open'),
    address: Type.Union([Type.String(), Type.Null()], { description: 'the address it was opened from' }),
    userAgent: Type.Union([Type.String(), Type.Null()]),
  },
  component({ name: 'PortalSession', description: 'A session in the partner portal.' }),
)

export const listPortalSessionsContract = routeContract({
  method: 'GET',
  path: '/admin/v1/portal/sessions',
  operationId: 'listPortalSessions',
  tag: 'portal',
  summary: 'List portal sessions, newest first (at most 500); ended or expired ones for a day after',
  query: Type.Object({
    enterpriseId: Type.Optional(
      Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: "one enterprise's sessions only" }),
    ),
  }),
  answer: {
    description: 'The sessions',
    payload: { json: Type.Object({ sessions: Type.Array(PortalSessionRowSchema) }) },
  },
  refusals: [ResponseCode.INVALID_PARAMETER],
  permission: 'portal.view',
})

export const endPortalSessionContract = routeContract({
  method: 'POST',
  path: '/admin/v1/portal/sessions/:sessionId/end',
  operationId: 'endPortalSession',
  tag: 'portal',
  summary: 'End a portal session: its next request is refused (4010), on every instance',
  params: Type.Object({ sessionId: Type.Integer({ minimum: 1, description: 'the session' }) }),
  answer: { description: 'The session as it is now', payload: { json: PortalSessionRowSchema } },
  refusals: WITH_ID,
  permission: 'portal.manage',
})

export const portalAdminContracts = [
  createPortalLinkContract,
  createOperatorViewContract,
  listPortalSessionsContract,
  endPortalSessionContract,
] as const

/** Compiles only while the session schema describes exactly the rows the store answers. */
export type SessionSchemaDescribesItsRows = Holds<
  Same<Static<typeof PortalSessionRowSchema>, PortalSessionRow>
>
