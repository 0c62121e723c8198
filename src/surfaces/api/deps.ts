import type { Config } from '../../config/types.js';
import type { BudgetService } from '../../gateway/billing/budgets.js';
import type { ChargeApplier } from '../../gateway/billing/charge-applier.js';
import type { KeyService } from '../../gateway/keys/service.js';
import type { ClusterService } from '../../platform/clusters/service.js';
import type { CostService } from '../../platform/costs/service.js';
import type { ProjectService } from '../../platform/orgs/projects.js';
import type { Passwords } from '../../platform/people/passwords.js';
import type { SessionStore } from '../../platform/people/sessions.js';
import type { UserService } from '../../platform/people/users.js';
import type { RunService } from '../../platform/runs/service.js';
import type { RunWorker } from '../../platform/runs/worker.js';
import type { PublicHosts } from '../../platform/runs/public-hosts.js';
import type { ClusterIdentity } from '../../platform/clusters/identity.js';
import type { StackCatalog } from '../../platform/stacks/service.js';
import type { UploadSlots } from '../../platform/stacks/upload-slots.js';
import type { Logger } from '../../shared/http/log.js';
import type { WindowCounter } from '../../shared/db/window-counter.js';

/**
 * What the generic API (`/api/v1`, also at `/v1`) reads of the services. `createApiRoutes(deps,
 * clientOf)` takes this; the app passes its whole `Services`, which has all of it.
 */
export interface ApiDeps {
  config: Config;
  log: Logger;
  /** Who is calling: a key (`keys`) or a session (`sessions`, `users`). */
  keys: KeyService;
  sessions: SessionStore;
  users: UserService;
  passwords: Passwords;
  /** The hourly limits (`access.ts`). */
  windowCounter: WindowCounter;
  projects: ProjectService;
  /** A project's budget, read with its spend (after the charges are written: `applier`) and set. */
  budgets: BudgetService;
  applier: ChargeApplier;
  costs: CostService;
  clusters: ClusterService;
  clusterIdentity: ClusterIdentity;
  stacks: StackCatalog;
  uploads: UploadSlots;
  runs: RunService;
  runWorker: RunWorker;
  publicHosts: PublicHosts;
}
