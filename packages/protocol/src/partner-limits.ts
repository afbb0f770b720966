/** How far ahead of the platform's clock a request's issuedAt may be, for clients whose clock runs fast. */
export const ISSUED_AT_MAX_AHEAD_SECONDS = 60

/** The longest part of a request path (a media link, an audioId): longer is refused with 4140. */
export const MAX_PATH_PARAMETER_LENGTH = 1024

/** A partner request's largest body, in bytes (EARSHOT_BODY_LIMIT): its default, and the most it may be set to. */
export const PARTNER_BODY_LIMIT = { defaultBytes: 64 * 1024, maxBytes: 16 * 1024 * 1024 } as const
