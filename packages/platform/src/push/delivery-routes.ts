import type { FastifyInstance } from 'fastify'
import type { PlatformContext } from '../context.js'

/** The operators' view of push deliveries (DESIGN.md §7): list, show, replay. */
export function deliveryRoutes(_app: FastifyInstance, _context: PlatformContext, _prefix: string): void {}
