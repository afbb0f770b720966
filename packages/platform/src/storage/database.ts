// The Database the platform talks to storage through: shared with the partner kit.
export type { Database, Queryable } from '@earshot/support/storage'
