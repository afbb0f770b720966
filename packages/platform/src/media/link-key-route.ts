import Type from 'typebox'
import { adminOperation } from '../admin-client/admin-operations.js'
import type { PlatformContext } from '../context.js'
import { WITH_BODY } from '../http/admin-params.js'
import type { RouteSpec } from '../http/route-spec.js'

const RotationSchema = Type.Object(
  {
    retireOthers: Type.Optional(
      Type.Boolean({ description: 'links signed with the earlier keys stop working (a key has leaked)' }),
    ),
  },
  { additionalProperties: false },
)

export const RotatedLinkKeySchema = Type.Object({
  keyId: Type.Integer({ minimum: 1, description: 'the key new links are signed with' }),
  retiredOthers: Type.Boolean(),
})

/** POST /admin/v1/media/rotate-link-key: new links are signed with a new key, on every instance within seconds. */
export const linkKeyRoute: RouteSpec<PlatformContext> = {
  ...adminOperation('rotateLinkKey'),
  tag: 'media',
  summary: 'Sign media links with a new key',
  description:
    'Every instance signs with the new key within 5 s. Links signed before keep working until they expire, unless retireOthers is true: then they answer 4030 (on every instance within 5 s).',
  body: { json: RotationSchema },
  answer: { description: 'Rotated', payload: { json: RotatedLinkKeySchema } },
  refusals: WITH_BODY,
  handle: (context) =>
    async function rotateLinkKey(request) {
      const retireOthers = (request.body as { retireOthers?: unknown } | undefined)?.retireOthers === true
      const keyId = await context.media.links.rotate(retireOthers)
      return { keyId, retiredOthers: retireOthers }
    },
}
