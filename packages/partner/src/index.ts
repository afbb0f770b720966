export type {
  AudioRecordingData,
  ChangeKind,
  RecordingData,
  RecordingFilter,
  TranscriptRecordingData,
  TranscriptSentence,
} from '@earshot/protocol'
export {
  type AccessTokenInfo,
  type AudioItem,
  type AudioPage,
  type ChangeItem,
  type ChangePage,
  type ChangesRequest,
  type DownloadAudioOptions,
  type DownloadedAudio,
  type DownloadProgress,
  EarshotClient,
  type EarshotClientOptions,
  type RequestOptions,
} from './client/earshot-client.js'
export {
  EarshotApiError,
  EarshotConfigError,
  EarshotDigestMismatchError,
  EarshotError,
  EarshotNetworkError,
  EarshotNoAudioError,
  EarshotResponseError,
  EarshotTimeoutError,
} from './client/errors.js'
export type {
  DeliveriesRequest,
  Delivery,
  DeliveryAttempt,
  DeliveryPage,
  Endpoint,
  EndpointChanges,
  EndpointHealth,
  EndpointList,
  LevelsWindow,
  NewEndpoint,
  PortalAccess,
  PortalLink,
  PortalLinkRequest,
  ReceiverCheckOptions,
  ReceiverCheckReport,
  RemovedEndpoint,
  ReplayableState,
  Replayed,
  ReplaySinceRequest,
  RotatedKey,
  ServiceLevels,
} from './client/integration-types.js'
export {
  type ChangeMirror,
  type MirroredRecording,
  openChangeMirror,
  type SyncOptions,
  type SyncResult,
  syncChanges,
} from './mirror/change-mirror.js'
export * from './receiver/index.js'
export {
  databaseRecordingStore,
  fileRecordingStore,
  type RecordingStore,
} from './receiver/recording-store.js'
