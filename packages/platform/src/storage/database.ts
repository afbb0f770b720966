// The Database the platform talks to storage through: shared with the partner kit.
export { type Database, type Queryable, queryOnGenericPlan } from '@earshot/support/storage'
