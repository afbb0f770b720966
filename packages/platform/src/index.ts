// The platform as a library: start it in a process of your own (tests, embedding), with the configuration
// read and validated exactly as `earshot serve` does, and audio kept in a store of your own if you like.
export { ConfigError, loadConfig, type PlatformConfig } from './config/config.js'
export { DirectoryStore } from './media/directory-store.js'
export { type ByteRange, type MediaStore, MediaTooLargeError, type StoredFile } from './media/media-store.js'
export { type PlatformOptions, type RunningPlatform, startPlatform } from './platform.js'
export type { Database } from './storage/database.js'
