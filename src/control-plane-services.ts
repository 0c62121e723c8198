import { PageGate } from './shared/http/page-gate.js';
import type { RedisClient } from './shared/db/redis.js';
import type { Config } from './config/index.js';
import type { BlobStore } from './shared/blobs/blob-store.js';
import type { Database } from './shared/db/client.js';
import type { Logger } from './shared/http/log.js';
import { OrgService } from './platform/orgs/service.js';
import { ProjectService } from './platform/orgs/projects.js';
import { Passwords } from './platform/people/passwords.js';
import { SessionStore } from './platform/people/sessions.js';
import { UserService } from './platform/people/users.js';
import { createWindowCounter, type WindowCounter } from './shared/db/window-counter.js';
import { ClusterService } from './platform/clusters/service.js';
import { NodeMaintenance } from './platform/clusters/node-maintenance.js';
import { StackCatalog } from './platform/stacks/service.js';
import { UploadSlots } from './platform/stacks/upload-slots.js';
import { RunService } from './platform/runs/service.js';
import { RunWorker } from './platform/runs/worker.js';
import { PublicHosts } from './platform/runs/public-hosts.js';
import { SandboxChooser } from './platform/runs/sandbox/choose.js';
import { ClusterIdentity } from './platform/clusters/identity.js';
import { requireTool } from './platform/runs/tool.js';
import { CostService } from './platform/costs/service.js';

// The control plane's two groups of `Services` (`services.ts`): people, and the platform's
// machines.

/**
 * People (`platform/people/`, `platform/orgs/`): users and sign-in, organizations and their
 * projects.
 */
export interface PeopleServices {
  users: UserService;
  passwords: Passwords;
  /** Portal sign-in sessions. */
  sessions: SessionStore;
  /** Hourly and sign-in counters of the generic API, in Redis or in memory. */
  windowCounter: WindowCounter;
  orgs: OrgService;
  projects: ProjectService;
}

/**
 * The control plane's machines (`platform/`): clusters and their nodes' keys, stacks, costs, and
 * the runs that apply stacks.
 */
export interface PlatformServices {
  /** Hardware profiles, nodes and organizations' clusters. */
  clusters: ClusterService;
  /**
   * Node access changed after a node was added, and nodes a deleted cluster's key is stuck on,
   * released.
   */
  nodeMaintenance: NodeMaintenance;
  /** The template (stack) catalog. */
  stacks: StackCatalog;
  /** Stack uploads this process reads at once, in all and per user. */
  uploads: UploadSlots;
  /** Each organization's portal pages this process draws at once, and how many more wait. */
  portalPages: PageGate;
  /** Rate cards, conversion rates, billing currencies and cost reports. */
  costs: CostService;
  /** Stacks applied to clusters: the queue, states and logs. */
  runs: RunService;
  /** Applies queued runs in this process (started by `server/start.ts`). */
  runWorker: RunWorker;
  /** Each cluster's SSH key on its nodes: installed, sealed, removed (`clusters/identity.ts`). */
  clusterIdentity: ClusterIdentity;
  /** Runs' public URLs and where each goes (`runs/public-hosts.ts`; served by `surfaces/edge/`). */
  publicHosts: PublicHosts;
}

/**
 * People's services: users and their passwords, sign-in sessions and counters, organizations and
 * projects.
 */
export function createPeopleServices(
  config: Config,
  db: Database,
  redis: RedisClient | null,
  catalogChanged: () => void,
): PeopleServices {
  const passwords = new Passwords(config.people.passwordCost);
  return {
    users: new UserService(db, passwords, catalogChanged),
    passwords,
    sessions: new SessionStore(db, { idleMs: config.people.sessionIdleMs, absoluteMs: config.people.sessionMaxMs }),
    windowCounter: createWindowCounter(redis, config.limits.redisPrefix),
    orgs: new OrgService(db, catalogChanged),
    projects: new ProjectService(db, catalogChanged),
  };
}

/**
 * The control plane's services: clusters and their nodes' keys, stacks, costs, and the runs that
 * apply stacks.
 */
export function createPlatformServices(config: Config, db: Database, blobs: BlobStore, log: Logger): PlatformServices {
  const identity = new ClusterIdentity({ db, config: config.nodeAccess, log });
  const clusters = new ClusterService(db, {
    nodeAccess: config.nodeAccess,
    reservedHosts: reservedHostsOf(config),
    identity,
  });
  const stacks = new StackCatalog(db, blobs, {
    stacksPerUser: config.uploads.stacksPerUser,
    stacksBytesPerUser: config.uploads.stacksBytesPerUser,
  });
  const sandboxes = new SandboxChooser(config.runs, (message) => log.warn(`run sandbox: ${message}`));
  const runs = new RunService(db, clusters, stacks, async () => {
    requireTool({ configured: config.runs.tofuBin, pathList: config.runs.searchPath });
    await sandboxes.require();
  });
  const publicHosts = new PublicHosts(db, log);
  return {
    clusters,
    nodeMaintenance: new NodeMaintenance({ db, config: config.nodeAccess, identity, log }),
    stacks,
    uploads: new UploadSlots(config.uploads),
    portalPages: new PageGate(config.portalPages),
    costs: new CostService(db),
    runs,
    clusterIdentity: identity,
    runWorker: new RunWorker({
      db,
      blobs,
      runs,
      clusters,
      identity,
      sandboxes,
      config: config.runs,
      log,
      onEnded: () => void publicHosts.refresh(),
    }),
    publicHosts,
  };
}

/**
 * The gateway's own host names, which no cluster's public URLs may take: its public URL's, and
 * localhost.
 */
function reservedHostsOf(config: Config): string[] {
  const hosts = ['localhost'];
  if (config.publicUrl) hosts.push(new URL(config.publicUrl).hostname.toLowerCase());
  return hosts;
}
