import Type from 'typebox'
import { ResponseCode } from './error-catalogue.js'
import {
  AccessTokenSchema,
  CallbackPlaintextSchema,
  ChangePageSchema,
  ChangesRequestSchema,
  RecordingFilterSchema,
  RecordingListSchema,
  TokenRequestSchema,
} from './messages.js'
import { BEARER_REFUSALS } from './partner-refusals.js'
import { routeContract } from './route-contract.js'
import { selfServiceContracts } from './self-service-contracts.js'

export { BEARER_REFUSALS }

/* The partner API's routes as the platform serves them and partners call them. */

/** POST /openapi/v1/token. The answer's data is not encrypted. */
export const issueTokenContract = routeContract({
  method: 'POST',
  path: '/openapi/v1/token',
  operationId: 'issueToken',
  tag: 'authentication',
  summary: 'Issue an access token',
  description:
    'Several tokens of one enterprise coexist; issuing one revokes none. A token is revoked when its enterprise is disabled or its keyVersion retired.',
  open: true,
  body: { json: TokenRequestSchema },
  answer: {
    description: 'A token (data not encrypted)',
    payload: { result: AccessTokenSchema, sealed: false },
  },
  refusals: BEARER_REFUSALS.filter((code) => code !== ResponseCode.UNAUTHORIZED),
})

/** POST /openapi/v1/audios: a page of the enterprise's recordings matching a filter, and their total. */
export const queryRecordingsContract = routeContract({
  method: 'POST',
  path: '/openapi/v1/audios',
  operationId: 'queryRecordings',
  tag: 'recordings',
  summary: 'Query recordings',
  body: { sealed: RecordingFilterSchema },
  answer: {
    description: 'A page of recordings, sealed',
    payload: { result: RecordingListSchema, sealed: true },
  },
  refusals: BEARER_REFUSALS,
})

/** POST /openapi/v1/audios/changes: same envelope, token and replay guard as the query. */
export const readChangesContract = routeContract({
  method: 'POST',
  path: '/openapi/v1/audios/changes',
  operationId: 'readChanges',
  tag: 'changes',
  summary: 'Read the change feed',
  body: { sealed: ChangesRequestSchema },
  answer: { description: 'A page of changes, sealed', payload: { result: ChangePageSchema, sealed: true } },
  refusals: BEARER_REFUSALS,
})

/** POST /openapi/v1/callback: the partner confirms it has a recording; its acknowledged deliveries are confirmed. */
export const confirmReceiptContract = routeContract({
  method: 'POST',
  path: '/openapi/v1/callback',
  operationId: 'confirmReceipt',
  tag: 'recordings',
  summary: 'Confirm the receipt of a pushed recording',
  description:
    'Confirms the deliveries of that audioId the partner has acknowledged. A repeated callback answers 2000 and changes nothing more. A deleted recording answers 2000 if the partner had it, else 4040.',
  body: { sealed: CallbackPlaintextSchema },
  answer: { description: 'Confirmed', payload: { result: null, sealed: false } },
  refusals: [...BEARER_REFUSALS, ResponseCode.NOT_FOUND],
})

/** GET (and HEAD) /media/v1/:link: the stored audio a signed link grants, whole or by range. */
export const fetchAudioContract = routeContract({
  method: 'GET',
  path: '/media/v1/:link',
  operationId: 'fetchAudio',
  tag: 'media',
  summary: "Fetch a recording's stored audio",
  description:
    'The link is the credential (no bearer token): a denoiseUrl from a query, push or change feed answer, valid for EARSHOT_MEDIA_URL_TTL. Range (one range), If-Range, If-None-Match and HEAD are honoured; ETag is the SHA-256 of the file, Repr-Digest (RFC 9530) its sha-256. A 304 and a 416 (with Content-Range: bytes */size; any range of an empty file is one) have no body. Every answer carries X-Content-Type-Options: nosniff and Content-Security-Policy: sandbox.',
  open: true,
  head: true,
  params: Type.Object({ link: Type.String({ description: 'the opaque part of the link, as given' }) }),
  answer: { description: 'The audio', payload: { binary: ['audio/*'] } },
  otherAnswers: {
    '206': { description: 'The range asked for', payload: { binary: ['audio/*'] } },
    '304': { description: 'Not modified (If-None-Match)' },
    '416': { description: 'The range is past the end of the file' },
  },
  refusals: [
    ResponseCode.FORBIDDEN,
    ResponseCode.NOT_FOUND,
    ResponseCode.URI_TOO_LONG,
    ResponseCode.RATE_LIMITED,
  ],
})

export const partnerContracts = [
  issueTokenContract,
  queryRecordingsContract,
  readChangesContract,
  confirmReceiptContract,
  fetchAudioContract,
  ...selfServiceContracts,
] as const
