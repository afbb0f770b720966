// The platform's parts that this repository's benchmarks and test kit reach into (a floor server built
// from the same pieces, a database migrated or tended directly, enterprises and recordings created
// without the admin API). Not an API: anything here may change in any release.
import { addFirstEndpoint } from './endpoints/endpoint-store.js'
import {
  createEnterprise as createEnterpriseIn,
  type EnterpriseCredentials,
} from './enterprises/enterprise-store.js'
import type { Database } from './storage/database.js'

export { adminContracts } from './admin-client/admin-contracts.js'
export { accessTokens } from './auth/access-tokens.js'
export { nonceGuard } from './auth/replay-guard.js'
export { tokenSigningKey } from './auth/token-signing-key.js'
export { receiptBatcher } from './deliveries/delivery-receipts.js'
export { DELIVERY_STATES, type DeliveryState } from './deliveries/delivery-states.js'
export { samplePhrases, sampleTopics } from './demo/demo-seed.js'
export { bearerCredentials } from './http/bearer.js'
export { insertRecordings, type NewRecording, queryRecordings } from './recordings/recording-store.js'
export { computeLevels } from './self-service/service-levels.js'
export { migrate, migrations } from './storage/migrations.js'
export { openDatabase, type StorageOptions } from './storage/open-database.js'
export { tendDatabase, type UpkeepStep } from './storage/upkeep.js'
export type { EnterpriseCredentials }

/** An enterprise made as the admin API makes one: with its push URL's endpoint when one is given. */
export function createEnterprise(
  db: Database,
  name: string,
  pushUrl: string | null,
  randomBytes?: (size: number) => Buffer,
): Promise<EnterpriseCredentials> {
  const first = pushUrl === null ? null : { pushUrl, addEndpoint: addFirstEndpoint }
  return createEnterpriseIn(db, name, first, randomBytes)
}
