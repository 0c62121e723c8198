import type { CatalogService } from './catalog/service.js';
import type { Config } from './config.js';
import type { Database } from './db/client.js';
import type { Fleet } from './engines/fleet.js';
import type { Logger } from './http/log.js';
import type { KeyService } from './keys/service.js';
import type { ChargeWriter } from './billing/charge-writer.js';
import type { WalletService } from './billing/wallet.js';
import type { OrgService } from './platform/orgs.js';

/**
 * Everything the routes need, built once at start-up (see `gateway.ts`) and
 * passed in: no module reaches for a global.
 */
export interface Services {
  config: Config;
  db: Database;
  log: Logger;
  keys: KeyService;
  wallets: WalletService;
  /** Writes usage and charges in group commits; see `billing/charge-writer.ts`. */
  charges: ChargeWriter;
  orgs: OrgService;
  catalog: CatalogService;
  fleet: Fleet;
  /** The operator token that guards the management API. */
  adminToken: string;
}
