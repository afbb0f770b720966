import type { FastifyRequest } from 'fastify'

/**
 * How the browser reaches the admin listener: the scheme a TLS-terminating proxy says it was reached by.
 * A forged header gains nothing: a setup link or redirect made from it leads the forger's own browser
 * astray, an identity provider accepts only the redirect URIs registered with it, and a cookie marked
 * Secure by it is only harder to send.
 */
export function adminOrigin(request: FastifyRequest): string {
  const forwarded = request.headers['x-forwarded-proto']
  const scheme = typeof forwarded === 'string' ? forwarded.split(',')[0]?.trim() : undefined
  return `${scheme === 'https' || scheme === 'http' ? scheme : request.protocol}://${request.host}`
}

/** Whether the browser reached the admin listener over TLS: its session cookie is then marked Secure. */
export function isSecure(request: FastifyRequest): boolean {
  return adminOrigin(request).startsWith('https:')
}
