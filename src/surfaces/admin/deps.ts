import type { Config } from '../../config/types.js';
import type { Books } from '../../gateway/billing/books.js';
import type { BudgetService } from '../../gateway/billing/budgets.js';
import type { ChargeApplier } from '../../gateway/billing/charge-applier.js';
import type { UsageReports } from '../../gateway/billing/usage-reports.js';
import type { WalletService } from '../../gateway/billing/wallet.js';
import type { CatalogService } from '../../gateway/catalog/service.js';
import type { Fleet } from '../../gateway/engines/fleet.js';
import type { FlowControl } from '../../gateway/flow/flow-control.js';
import type { KeyService } from '../../gateway/keys/service.js';
import type { ClusterService } from '../../platform/clusters/service.js';
import type { NodeMaintenance } from '../../platform/clusters/node-maintenance.js';
import type { CostService } from '../../platform/costs/service.js';
import type { ProjectService } from '../../platform/orgs/projects.js';
import type { OrgService } from '../../platform/orgs/service.js';
import type { UserService } from '../../platform/people/users.js';
import type { HeapGrowth } from '../../shared/heap-growth.js';

/**
 * What the operator API (`/admin/v1`) reads of the services. `createAdminRoutes(deps)` takes this;
 * the app passes its whole `Services`, which has all of it.
 */
export interface AdminDeps {
  config: Config;
  /** The operator token every route checks. */
  adminToken: string;
  orgs: OrgService;
  projects: ProjectService;
  users: UserService;
  keys: KeyService;
  wallets: WalletService;
  catalog: CatalogService;
  fleet: Fleet;
  /** Who waits for the fleet, and what each organization was served (`/admin/v1/flow`). */
  flow: FlowControl;
  clusters: ClusterService;
  nodeMaintenance: NodeMaintenance;
  costs: CostService;
  usageReports: UsageReports;
  books: Books;
  budgets: BudgetService;
  /** Waited on by the routes that read charges (`chargesWritten`). */
  applier: ChargeApplier;
  /** Lowered while an export or a full verification is written (`shared/heap-growth.ts`). */
  heapGrowth: HeapGrowth;
}
