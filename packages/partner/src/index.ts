export type {
  AudioRecordingData,
  RecordingData,
  RecordingFilter,
  TranscriptRecordingData,
  TranscriptSentence,
} from '@earshot/protocol'
export {
  type AccessTokenInfo,
  type AudioItem,
  type AudioPage,
  EarshotClient,
  type EarshotClientOptions,
  type RequestOptions,
} from './client/earshot-client.js'
export {
  EarshotApiError,
  EarshotConfigError,
  EarshotError,
  EarshotNetworkError,
  EarshotResponseError,
  EarshotTimeoutError,
} from './client/errors.js'
export * from './receiver/index.js'
export { databaseRecordingStore, fileRecordingStore, type RecordingStore } from './storage/recording-store.js'
