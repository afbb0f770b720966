import { dataModule } from '../http/static-asset.js'
import { adminOperations } from './admin-operations.js'

/**
 * admin-operations.js as plain data: the same table without the contracts' imports. The console's pages
 * load it beside the compiled client (a browser cannot load the contracts), and the CLI bundle inlines
 * it in place of admin-operations.js (no client command needs the contracts' schemas).
 */
export function adminOperationsModule(): string {
  return dataModule({ adminOperations })
}
