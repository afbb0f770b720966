// The platform as a library: start it in a process of your own (tests, benchmarks, embedding), with
// the configuration read and validated exactly as `earshot serve` does.
export { ConfigError, loadConfig, type PlatformConfig } from './config/config.js'
export { samplePhrases, sampleTopics } from './demo/demo-seed.js'
export { createEnterprise, type EnterpriseCredentials } from './enterprises/enterprise-store.js'
export { DirectoryStore } from './media/directory-store.js'
export { type ByteRange, type MediaStore, MediaTooLargeError, type StoredFile } from './media/media-store.js'
export { type PlatformOptions, type RunningPlatform, startPlatform } from './platform.js'
export { DELIVERY_STATES, type DeliveryState } from './push/delivery-states.js'
export { insertRecordings, type NewRecording } from './recordings/recording-store.js'
export type { Database } from './storage/database.js'
export { migrate, migrations } from './storage/migrations.js'
export { openDatabase, type StorageOptions } from './storage/open-database.js'
export { tendDatabase, type UpkeepStep } from './storage/upkeep.js'
