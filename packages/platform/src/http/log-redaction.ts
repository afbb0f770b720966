/**
 * What a log line must never hold, found wherever it appears in the line as written (a path, a query, a
 * header, an error's message or stack): the signature of a media link (the link is the download's only
 * credential), bearer and access tokens, portal links and session cookies, the values of fields named as
 * secrets, and query strings (an admin token sent in one). Applied by both listeners' loggers to every
 * line (create-server.ts).
 */
const REDACTIONS: readonly [RegExp, string][] = [
  // A media link's grant may be read (it names the file); what follows it, the MAC, is the credential. A
  // link whose grant is percent-encoded is cut at the first escape, as its MAC follows.
  [/(\/media\/v1\/[A-Za-z0-9_-]*)[.%][^\s"'?#\\/<>]*/g, '$1.[redacted]'],
  [/(bearer\s+)[^\s"'\\,]+/gi, '$1[redacted]'],
  // A portal link's secret (in the path that spends it) and a portal session's cookie.
  [/\b(ptl|pts)_[A-Za-z0-9_-]+/g, '$1_[redacted]'],
  // An access token: v1.<enterprise>.<keyVersion>.<expiry>.<salt>.<MAC> (access-tokens.ts).
  [/\bv1\.\d+\.\d+\.\d+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g, '[redacted token]'],
  [
    /"(secret|newSecret|accessToken|adminToken|token|authorization|cookie|password|apiKey)":"(?:[^"\\]|\\.)*"/gi,
    '"$1":"[redacted]"',
  ],
  [/((?:https?:\/\/[^\s"'?#\\/]+)?\/[^\s"'?#\\<>]*)\?[^\s"'#\\<>]+/g, '$1?[redacted]'],
]

/** The text with every credential it holds replaced by `[redacted]`. */
export function redactSecrets(text: string): string {
  let redacted = text
  for (const [pattern, replacement] of REDACTIONS) redacted = redacted.replace(pattern, replacement)
  return redacted
}

/**
 * A request's path as its log line gives it: the query redacted, and a part over `maxPart` characters
 * (one the router refuses, 4140) given by its length only.
 */
export function loggedPath(url: string, maxPart: number): string {
  const question = url.indexOf('?')
  const path = question < 0 ? url : url.slice(0, question)
  const shortened = path
    .split('/')
    .map((part) => (part.length > maxPart ? `[${part.length} characters]` : part))
    .join('/')
  return question < 0 ? shortened : `${shortened}?[redacted]`
}
