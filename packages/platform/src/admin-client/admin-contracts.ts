import {
  addOperatorContract,
  completeSetupContract,
  createKeyContract,
  endOperatorSessionsContract,
  listKeysContract,
  listOperatorsContract,
  revokeKeyContract,
  sessionContract,
  signInContract,
  signOutContract,
  updateOperatorContract,
} from '../access/access-contract.js'
import { ssoContracts } from '../access/sso-contract.js'
import { exportAuditContract, listAuditContract, verifyAuditContract } from '../audit/audit-contract.js'
import { consoleContracts } from '../console/console-contract.js'
import { deliveryContracts } from '../deliveries/delivery-contract.js'
import { endpointContracts } from '../endpoints/endpoint-contract.js'
import { enterpriseContracts } from '../enterprises/enterprise-contract.js'
import { erasureAdminContracts } from '../erasures/erasure-contract.js'
import type { AdminRouteContract } from '../http/admin-contract.js'
import { healthContract, metricsContract } from '../http/operations-contract.js'
import { importRecordingsContract } from '../imports/import-contract.js'
import { mediaContracts } from '../media/media-contract.js'
import { portalAdminContracts } from '../portal/portal-admin-contract.js'
import { pushUrlContracts } from '../push-urls/push-url-contract.js'
import { checkReceiverContract } from '../receiver-check/receiver-check-contract.js'
import { recordingContracts } from '../recordings/recording-contract.js'

/**
 * Every operation of the admin API, as its feature declares it: the admin listener mounts a route for each
 * (a test holds them to it), and the admin client is typed and addressed from them.
 */
export const adminContracts = [
  healthContract('operations', []),
  metricsContract,
  ...enterpriseContracts,
  ...recordingContracts,
  ...mediaContracts,
  importRecordingsContract,
  ...deliveryContracts,
  ...endpointContracts,
  checkReceiverContract,
  ...pushUrlContracts,
  ...portalAdminContracts,
  ...erasureAdminContracts,
  ...consoleContracts,
  signInContract,
  completeSetupContract,
  sessionContract,
  signOutContract,
  ...ssoContracts,
  listOperatorsContract,
  addOperatorContract,
  updateOperatorContract,
  endOperatorSessionsContract,
  listKeysContract,
  createKeyContract,
  revokeKeyContract,
  listAuditContract,
  verifyAuditContract,
  exportAuditContract,
] as const satisfies readonly AdminRouteContract[]

type AdminContract = (typeof adminContracts)[number]

export type AdminOperationId = AdminContract['operationId']

/** The contract of the admin operation `Id`. */
export type AdminContractOf<Id extends AdminOperationId> = Extract<AdminContract, { operationId: Id }>
