export {
  defaultLogger,
  type LoggerOptions,
  type MessageFirstLogger,
  type ReceiverLogger,
  silentLogger,
} from '../logging/receiver-logger.js'
export {
  type Admission,
  type CallbackOutbox,
  type CallbackOutboxOptions,
  type CallbackState,
  type ConfirmReceipt,
  isPermanentRefusal,
  openCallbackOutbox,
  type ReceiptCallback,
  type ReceivedEvent,
} from '../outbox/callback-outbox.js'
export {
  type Database,
  type DatabaseOptions,
  DataDirLockedError,
  openDatabase,
  type Queryable,
} from '../storage/database.js'
export type { PushReceiverPluginOptions } from './fastify-plugin.js'
export { DEFAULT_PUSH_PATH, type PushAnswer, type PushAnswerBody, type PushRequest } from './push-exchange.js'
export {
  createPushReceiver,
  type PushReceiver,
  type PushReceiverOptions,
  type ReceivedDeletion,
  type ReceivedPush,
} from './push-receiver.js'
