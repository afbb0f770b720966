import type { RouteContract } from '@earshot/protocol'
import type { Permission } from './permissions.js'

/** An admin route: every one but the open ones names the permission it needs (permissions.ts). */
export type AdminRouteContract = RouteContract &
  ({ open: true; permission?: undefined } | { open?: false; permission: Permission })
