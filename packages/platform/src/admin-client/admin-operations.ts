/**
 * Where each operation of the admin API is served: its routes take their method and path from here, and
 * the admin client (the CLI's, the tests', the console's) calls operations by name through it. Plain data
 * with no imports, so that the console's pages load it as a module as it is.
 */
export const adminOperations = {
  health: { method: 'GET', path: '/healthz' },
  metrics: { method: 'GET', path: '/metrics' },
  createEnterprise: { method: 'POST', path: '/admin/v1/enterprises' },
  listEnterprises: { method: 'GET', path: '/admin/v1/enterprises' },
  updateEnterprise: { method: 'PATCH', path: '/admin/v1/enterprises/:enterpriseId' },
  disableEnterprise: { method: 'POST', path: '/admin/v1/enterprises/:enterpriseId/disable' },
  rotateKey: { method: 'POST', path: '/admin/v1/enterprises/:enterpriseId/rotate-key' },
  setPushUrl: { method: 'PUT', path: '/admin/v1/enterprises/:enterpriseId/push-url' },
  listRecordings: { method: 'GET', path: '/admin/v1/enterprises/:enterpriseId/recordings' },
  ingestRecording: { method: 'POST', path: '/admin/v1/enterprises/:enterpriseId/recordings' },
  importRecordings: { method: 'POST', path: '/admin/v1/enterprises/:enterpriseId/recordings/import' },
  attachTranscript: {
    method: 'PUT',
    path: '/admin/v1/enterprises/:enterpriseId/recordings/:audioId/transcript',
  },
  updateRecording: { method: 'PATCH', path: '/admin/v1/enterprises/:enterpriseId/recordings/:audioId' },
  deleteRecording: { method: 'DELETE', path: '/admin/v1/enterprises/:enterpriseId/recordings/:audioId' },
  rotateLinkKey: { method: 'POST', path: '/admin/v1/media/rotate-link-key' },
  uploadAudio: { method: 'PUT', path: '/admin/v1/enterprises/:enterpriseId/recordings/:audioId/audio' },
  listDeliveries: { method: 'GET', path: '/admin/v1/deliveries' },
  showDelivery: { method: 'GET', path: '/admin/v1/deliveries/:deliveryId' },
  replayDelivery: { method: 'POST', path: '/admin/v1/deliveries/:deliveryId/replay' },
  cancelDelivery: { method: 'POST', path: '/admin/v1/deliveries/:deliveryId/cancel' },
  replayRange: { method: 'POST', path: '/admin/v1/enterprises/:enterpriseId/deliveries/replay' },
  replayUnreceipted: {
    method: 'POST',
    path: '/admin/v1/enterprises/:enterpriseId/deliveries/replay-unreceipted',
  },
  listEndpoints: { method: 'GET', path: '/admin/v1/endpoints' },
  listEnterpriseEndpoints: { method: 'GET', path: '/admin/v1/enterprises/:enterpriseId/endpoints' },
  addEndpoint: { method: 'POST', path: '/admin/v1/enterprises/:enterpriseId/endpoints' },
  showEndpoint: { method: 'GET', path: '/admin/v1/enterprises/:enterpriseId/endpoints/:endpointId' },
  updateEndpoint: { method: 'PATCH', path: '/admin/v1/enterprises/:enterpriseId/endpoints/:endpointId' },
  removeEndpoint: { method: 'DELETE', path: '/admin/v1/enterprises/:enterpriseId/endpoints/:endpointId' },
  checkReceiver: { method: 'POST', path: '/admin/v1/enterprises/:enterpriseId/endpoints/check' },
  listPushUrls: { method: 'GET', path: '/admin/v1/push-urls' },
  enablePushUrl: { method: 'POST', path: '/admin/v1/push-urls/enable' },
  overview: { method: 'GET', path: '/admin/v1/overview' },
  deliveryLog: { method: 'GET', path: '/admin/v1/delivery-log' },
  countReplayable: { method: 'GET', path: '/admin/v1/enterprises/:enterpriseId/deliveries/replayable' },
} as const

export type AdminOperationId = keyof typeof adminOperations

/** A route's operationId, method and path, from the table. */
export function adminOperation<Id extends AdminOperationId>(
  operationId: Id,
): { operationId: Id } & (typeof adminOperations)[Id] {
  return { operationId, ...adminOperations[operationId] }
}
