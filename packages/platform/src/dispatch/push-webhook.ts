import { PushEventSchema, ResponseCode } from '@earshot/protocol'
import Type from 'typebox'
import type { WebhookSpec } from '../http/route-spec.js'

/** The push (platform → partner), as the partner's document describes it. */
export const pushWebhook: WebhookSpec = {
  name: 'recordingEvent',
  operationId: 'pushRecordingEvent',
  summary: 'Push (platform → partner)',
  description:
    'The platform POSTs each event to the enterprise\'s push URL. Acknowledge it with HTTP 2xx and `{"code": 2000}` within EARSHOT_PUSH_TIMEOUT (10 s), dedup by eventId, then confirm it with the receipt callback. Anything else is a failed attempt, retried on the schedule 15s, 15s, 30s, 3m, 10m, 20m, 30m, 30m, 30m, 1h, 3h, 3h, 3h, 6h, 6h. An acknowledged push with no callback within 10 minutes is pushed again with the same eventId, at most 3 times.',
  headers: Type.Object({
    'X-Earshot-Event-Id': Type.String({ description: "the event's eventId, as in the sealed PushEvent" }),
  }),
  body: { sealed: PushEventSchema, bare: true },
  answer: {
    description: 'Acknowledged (any 2xx status with code 2000)',
    payload: { json: Type.Object({ code: Type.Literal(ResponseCode.OK) }) },
  },
  otherAnswers: {
    410: { description: 'Gone: the push URL is disabled at once, until an operator enables it' },
    default: { description: 'Anything else: a failed attempt' },
  },
}
