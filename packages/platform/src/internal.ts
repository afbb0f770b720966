// The platform's parts that this repository's benchmarks and test kit reach into (a floor server built
// from the same pieces, a database migrated or tended directly, enterprises and recordings created
// without the admin API). Not an API: anything here may change in any release.
export { accessTokens } from './auth/access-tokens.js'
export { nonceGuard } from './auth/replay-guard.js'
export { tokenSigningKey } from './auth/token-signing-key.js'
export { samplePhrases, sampleTopics } from './demo/demo-seed.js'
export { createEnterprise, type EnterpriseCredentials } from './enterprises/enterprise-store.js'
export { bearerCredentials } from './http/bearer.js'
export { DELIVERY_STATES, type DeliveryState } from './push/delivery-states.js'
export { receiptBatcher } from './push/receipts.js'
export { insertRecordings, type NewRecording, queryRecordings } from './recordings/recording-store.js'
export { migrate, migrations } from './storage/migrations.js'
export { openDatabase, type StorageOptions } from './storage/open-database.js'
export { tendDatabase, type UpkeepStep } from './storage/upkeep.js'
