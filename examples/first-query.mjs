// A first query against an Earshot platform: get a token, ask for five recordings, print them.
// Start a platform with demo data first (`npm start`, or `earshot serve --demo`), then run:
//   EARSHOT_ENTERPRISE_ID=1 EARSHOT_SECRET='<secret it printed>' node examples/first-query.mjs
import { randomUUID } from 'node:crypto'
// seal/open are the envelope (AES-256-GCM); in another language, docs/protocol.md's "The envelope"
// and the vectors in packages/protocol/test-data/envelope.json are all you need.
import { loadKey, open, seal } from '@earshot/protocol'

// `npm start` prints these; the demo's are also kept in .earshot/demo-credentials.json.
const baseUrl = process.env.EARSHOT_BASE_URL || 'http://127.0.0.1:8080'
const enterpriseId = Number(process.env.EARSHOT_ENTERPRISE_ID)
const keyVersion = Number(process.env.EARSHOT_KEY_VERSION || 1)
const secret = process.env.EARSHOT_SECRET

if (!Number.isSafeInteger(enterpriseId) || enterpriseId < 1 || !secret) {
  console.error(
    'Set EARSHOT_ENTERPRISE_ID and EARSHOT_SECRET (and EARSHOT_BASE_URL, EARSHOT_KEY_VERSION if not the defaults),\n' +
      'e.g. the demo credentials `earshot serve --demo` printed:\n' +
      "  EARSHOT_ENTERPRISE_ID=1 EARSHOT_SECRET='...' node examples/first-query.mjs",
  )
  process.exit(1)
}

// The secret becomes an AES-256 key; every request body is sealed under it with a fresh eventId.
// seal() draws a fresh nonce each time; an envelope sent twice is refused as a replay (4090): seal each try.
let key
try {
  key = loadKey(secret)
} catch (error) {
  console.error(`EARSHOT_SECRET is not usable: ${error.message}`)
  process.exit(1)
}

/**
 * POSTs a JSON body and returns the response's `data`, or stops with the platform's error. Every answer is
 * {code, msg, requestId, data?}: 2000 is success; the other codes are listed at /openapi.json.
 */
async function post(path, body, token) {
  const response = await fetch(new URL(path, baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  }).catch((error) => {
    console.error(
      `Cannot reach the platform at ${baseUrl} (${error.cause?.code ?? error.cause?.message ?? error.message}); is it running?`,
    )
    process.exit(1)
  })
  const answer = await response.json()
  if (answer.code !== 2000) {
    console.error(`${path} refused: error ${answer.code}: ${answer.msg} (requestId ${answer.requestId})`)
    process.exit(1)
  }
  return answer.data
}

// Every plaintext carries issuedAt, when it was sealed (Unix seconds): replayed later than 5 minutes, refused.
const sealNow = (plaintext) =>
  seal(key, keyVersion, randomUUID(), { ...plaintext, issuedAt: Math.floor(Date.now() / 1000) })

// 1. A token: an envelope of {} with the enterpriseId in plaintext beside it. Its answer is not sealed:
//    {accessToken, expiresIn (seconds, 7200 by default), tokenType: 'Bearer'}. Reuse it until it expires.
const { accessToken } = await post('/openapi/v1/token', { ...sealNow({}), enterpriseId })

// 2. A query: the filter is sealed, and so is the answer's `data`; open it with the same key. The filter
//    may also hold audioId, deviceUid, startTime/endTime (ISO 8601 with an offset) and page (size ≤ 100);
//    the answer is {specVersion, page, size, total, items: [{audioId, data}]}, newest first.
const data = await post('/openapi/v1/audios', sealNow({ size: 5 }), accessToken)
const list = open(data, key).plaintext

console.log(`${list.total} recordings in all; the first ${list.items.length}:`)
for (const { audioId, data: recording } of list.items) {
  // Set A (transcript) once a transcript exists, set B (audio file) before that.
  const fields = 'transcriptId' in recording ? 'transcript' : 'audio'
  console.log(`  ${audioId}  ${recording.deviceUid}  ${JSON.stringify(recording.title)}  (${fields})`)
}
