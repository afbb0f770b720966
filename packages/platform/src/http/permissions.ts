/**
 * What an operator may be allowed to do on the admin API, each admin route naming the one it needs; the
 * roles (access/roles.ts) grant them. The admin document lists them as `x-earshot-permissions`, and each
 * operation's as `x-earshot-permission`.
 */
export const permissions = {
  'enterprises.read': 'See enterprises, their settings and their key versions',
  'enterprises.write': "Change an enterprise's settings, or disable it",
  'enterprises.create': 'Create an enterprise, and be shown its first secret',
  'secrets.read': "Be shown an enterprise's new secret: rotate its key",
  'recordings.read': "Find an enterprise's recordings",
  'recordings.write': 'Ingest, import, update and delete recordings, and upload their audio',
  'media.write': 'Rotate the key that signs media links',
  'deliveries.read': 'See push deliveries and their attempts',
  'deliveries.replay': 'Replay push deliveries, or cancel them',
  'endpoints.read': 'See push endpoints and the health of push URLs',
  'endpoints.write': 'Add, change and remove push endpoints, enable push URLs, check receivers',
  'portal.view':
    "Look at an enterprise's partner portal read-only, as its partner sees it; list portal sessions",
  'portal.manage':
    "Mint links into an enterprise's partner portal for its partner (view or manage), end portal sessions",
  'erasures.read': 'See erasure requests, their progress per endpoint and their signed reports',
  'erasures.write':
    "Erase an enterprise's recordings by device or audioId, everywhere the platform keeps them",
  'operations.read': "See the platform's metrics and overview",
  'audit.read': 'Read, verify and export the audit trail',
  'operators.manage': 'Add operators, change their role, scope or name, disable them, end their sessions',
  'keys.manage': 'Create, list and revoke API keys',
} as const

export type Permission = keyof typeof permissions
