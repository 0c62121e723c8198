import type { Config } from '../../config/types.js';
import type { PageGate } from '../../shared/http/page-gate.js';
import type { GateKeeper } from '../../gateway/admission/gate-keeper.js';
import type { BudgetService } from '../../gateway/billing/budgets.js';
import type { ChargeApplier } from '../../gateway/billing/charge-applier.js';
import type { UsageReports } from '../../gateway/billing/usage-reports.js';
import type { WalletService } from '../../gateway/billing/wallet.js';
import type { CatalogService } from '../../gateway/catalog/service.js';
import type { Fleet } from '../../gateway/engines/fleet.js';
import type { FlowControl } from '../../gateway/flow/flow-control.js';
import type { KeyService } from '../../gateway/keys/service.js';
import type { ClusterIdentity } from '../../platform/clusters/identity.js';
import type { NodeMaintenance } from '../../platform/clusters/node-maintenance.js';
import type { ClusterService } from '../../platform/clusters/service.js';
import type { CostService } from '../../platform/costs/service.js';
import type { ProjectService } from '../../platform/orgs/projects.js';
import type { OrgService } from '../../platform/orgs/service.js';
import type { Passwords } from '../../platform/people/passwords.js';
import type { SessionStore } from '../../platform/people/sessions.js';
import type { UserService } from '../../platform/people/users.js';
import type { RunService } from '../../platform/runs/service.js';
import type { RunWorker } from '../../platform/runs/worker.js';
import type { StackCatalog } from '../../platform/stacks/service.js';
import type { UploadSlots } from '../../platform/stacks/upload-slots.js';
import type { WindowCounter } from '../../shared/db/window-counter.js';
import type { Logger } from '../../shared/http/log.js';
import type { Batches } from '../../gateway/batches/service.js';
import type { FileStore } from '../../gateway/files/store.js';

/**
 * What the portal (`/portal`) reads of the services. `createPortalRoutes(deps, clientOf)` takes
 * this; the app passes its whole `Services`, which has all of it. Each page also gets the signed-in
 * session's checks (`PortalSession`, `session.ts`).
 */
export interface PortalDeps {
  config: Config;
  log: Logger;
  /** Seeds the forms' tokens (`security.ts`). */
  adminToken: string;
  /**
   * Sign-in (`sign-in.tsx`, through `auth/`): who, their password, their session, the failed tries
   * counted.
   */
  users: UserService;
  passwords: Passwords;
  sessions: SessionStore;
  windowCounter: WindowCounter;
  orgs: OrgService;
  projects: ProjectService;
  keys: KeyService;
  wallets: WalletService;
  /** The wallet page shows the live hold (`gate.walletState`). */
  gateKeeper: GateKeeper;
  usageReports: UsageReports;
  /** A key's or a project's budget with its spend (`budgets.tsx`). */
  budgets: BudgetService;
  /** Waited on by the pages that read charges (`chargesWritten`). */
  applier: ChargeApplier;
  catalog: CatalogService;
  fleet: Fleet;
  /** Who waits for the fleet and each organization's share of it (`operator-fair-share.tsx`). */
  flow: FlowControl;
  costs: CostService;
  clusters: ClusterService;
  clusterIdentity: ClusterIdentity;
  nodeMaintenance: NodeMaintenance;
  stacks: StackCatalog;
  uploads: UploadSlots;
  /** Each organization's pages this process draws at once (`TOLLGATE_PORTAL_ORG_PAGES`). */
  portalPages: PageGate;
  runs: RunService;
  runWorker: RunWorker;
  /** The organization's batches and their cost so far (`batches.org`). */
  batches: Batches;
  /** Batches' result files, read for their download. */
  fileStore: FileStore;
}
