import { CatalogService } from './gateway/catalog/service.js';
import type { Config } from './config/index.js';
import type { Database } from './shared/db/client.js';
import type { Fleet } from './gateway/engines/fleet.js';
import type { Logger } from './shared/http/log.js';
import { KeyService } from './gateway/keys/service.js';
import { keyTokensSince } from './gateway/billing/monthly-tokens.js';
import { Books } from './gateway/billing/books.js';
import { UsageReports } from './gateway/billing/usage-reports.js';
import type { Redis } from 'ioredis';
import { createResponseCache, type ResponseCache } from './gateway/cache/response-cache.js';
import { ChargeApplier } from './gateway/billing/charge-applier.js';
import type { ChargeJournal } from './gateway/billing/journal.js';
import { GateKeeper } from './gateway/admission/gate-keeper.js';
import { budgetSpend } from './gateway/billing/budget-spend.js';
import { BudgetService } from './gateway/billing/budgets.js';
import { createMemoryGate } from './gateway/admission/memory-gate.js';
import { createRedisGate } from './gateway/admission/redis-gate.js';
import { WalletService } from './gateway/billing/wallet.js';
import { OrgService } from './platform/orgs/service.js';
import { ProjectService } from './platform/orgs/projects.js';
import { createMetrics, type Metrics } from './shared/observability/metrics.js';
import { Observer } from './shared/observability/observer.js';
import { createReadiness, type Readiness } from './server/readiness.js';
import { registerStateGauges } from './server/state-gauges.js';
import type { Tracing } from './shared/observability/tracing.js';
import { InFlight } from './shared/http/in-flight.js';
import { OutageLog } from './shared/http/outage.js';
import { RequestPathCache } from './gateway/catalog/request-path-cache.js';
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
import { DatabaseResponseStore } from './gateway/responses/database-store.js';
import type { ResponseStore } from './gateway/responses/store.js';

/**
 * Everything the routes need, built once at start-up (`server/start.ts`) and passed in: no module reaches for a
 * global. Built in four groups; a surface names only what it reads (`surfaces/<surface>/deps.ts`).
 */
export interface Services extends ProcessServices, GatewayServices, PeopleServices, PlatformServices {}

/** The process's own: settings, the store, the log, metrics and traces, readiness and drain. */
export interface ProcessServices {
  config: Config;
  db: Database;
  log: Logger;
  /** The operator token that guards the management API. */
  adminToken: string;
  /** Prometheus metrics, served at GET /metrics (unless TOLLGATE_METRICS=off: then the request path records none). */
  metrics: Metrics;
  /** Records requests into the metrics and traces (`observability/observer.ts`). */
  observer: Observer;
  /** Traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set; see `observability/tracing.ts`. */
  tracing: Tracing | null;
  /** What `/health/ready` answers: database, Redis, engines, draining. */
  readiness: () => Promise<Readiness>;
  /** Billed calls under way, and whether the gateway is draining; see `server/start.ts` drain(). */
  inFlight: InFlight;
  /** Logs a database outage once when it starts and once when it ends. */
  storeOutage: OutageLog;
}

/** The data plane (`gateway/`): keys, models, admission, the money of a billed call, caches, stored responses. */
export interface GatewayServices {
  keys: KeyService;
  catalog: CatalogService;
  /** Keys, models, prices and projects as the request path reads them, kept in this process; see `catalog/request-path-cache.ts`. */
  requestPathCache: RequestPathCache;
  fleet: Fleet;
  /** The four per-key limits and the wallet hold, decided in one step; see `admission/gate-keeper.ts`. */
  gateKeeper: GateKeeper;
  wallets: WalletService;
  /** Where a charge becomes durable before its response ends; see `billing/journal.ts`. */
  journal: ChargeJournal;
  /** Writes the journal's charges to PostgreSQL in group commits, off the request path. */
  applier: ChargeApplier;
  /** Usage reports: totals, groups, outcomes and records of usage (`billing/usage-reports.ts`). */
  usageReports: UsageReports;
  /** An organization's books verified and exported (`billing/books.ts`). */
  books: Books;
  /** Budgets per key and per project, read with their spend and set (`billing/budgets.ts`). */
  budgets: BudgetService;
  /** The per-key response cache, in Redis or in memory. */
  cache: ResponseCache;
  /** Stored Responses (`/v1/responses` with `store`), in the database: any process continues a conversation. */
  responseStore: ResponseStore;
}

/** People (`platform/people/`, `platform/orgs/`): users and sign-in, organizations and their projects. */
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

/** The control plane's machines (`platform/`): clusters and their nodes' keys, stacks, costs, and the runs that apply stacks. */
export interface PlatformServices {
  /** Hardware profiles, nodes and organizations' clusters. */
  clusters: ClusterService;
  /** Node access changed after a node was added, and nodes a deleted cluster's key is stuck on, released. */
  nodeMaintenance: NodeMaintenance;
  /** The template (stack) catalog. */
  stacks: StackCatalog;
  /** Stack uploads this process reads at once, in all and per user. */
  uploads: UploadSlots;
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

export interface ServiceParts {
  config: Config;
  db: Database;
  log: Logger;
  fleet: Fleet;
  adminToken: string;
  /** Where limits and spendable amounts are kept; null: in this process (the embedded default). */
  redis?: Redis | null;
  /** Opened by the caller (it reads the data folder): `ChargeJournal.open`. */
  journal: ChargeJournal;
  /** Started by the caller when tracing is configured (`observability/tracing.ts`). */
  tracing?: Tracing | null;
}

/**
 * Builds every service over one store.
 *
 * @example
 * const services = createServices({ config, db: store.db, log, fleet, adminToken });
 */
export function createServices(parts: ServiceParts): Services {
  const { config, db, log, fleet, adminToken, redis = null, journal, tracing = null } = parts;
  const storeOutage = new OutageLog(
    log,
    'database',
    'known keys are still served; charges wait in the journal, and keys, models or wallets not yet cached answer 503, until it is back',
  );
  // An embedded store has no other writer: every change goes through this process, which drops the
  // cache itself.
  const requestPathCache = new RequestPathCache(db, storeOutage, {
    pollMs: config.databaseUrl ? config.catalogPollMs : 0,
  });
  // A write through this process drops its cache at once; other replicas see the catalog version
  // move.
  const catalogChanged = () => requestPathCache.invalidate();
  const inFlight = new InFlight();
  const metricsOn = config.observability.metrics;
  const metrics = createMetrics({ orgLabel: config.observability.orgLabel, processMetrics: metricsOn });
  if (metricsOn) registerStateGauges(metrics, { journal, inFlight, fleet, storeOutage, redis });
  const processServices: ProcessServices = {
    config,
    db,
    log,
    adminToken,
    metrics,
    observer: new Observer(metricsOn ? metrics : null, tracing, config.currency),
    tracing,
    readiness: createReadiness({ db, redis, fleet, inFlight }),
    inFlight,
    storeOutage,
  };
  return {
    ...processServices,
    ...createGatewayServices(parts, requestPathCache, storeOutage, catalogChanged),
    ...createPeopleServices(config, db, redis, catalogChanged),
    ...createPlatformServices(config, db, log),
  };
}

/** The data plane's services: keys, models, admission and the wallets it holds, the charge path, caches. */
function createGatewayServices(
  parts: ServiceParts,
  requestPathCache: RequestPathCache,
  storeOutage: OutageLog,
  catalogChanged: () => void,
): GatewayServices {
  const { config, db, log, fleet, redis = null, journal } = parts;
  const gateOptions = { concurrencyLeaseMs: config.limits.concurrencyLeaseMs, holdLeaseMs: config.holdLeaseMs };
  const redisOptions = { prefix: config.limits.redisPrefix, rebuildGraceMs: config.rebuildGraceMs, ...gateOptions };
  const gate = redis ? createRedisGate(redis, redisOptions) : createMemoryGate(gateOptions);
  // The wallet service tells the gate keeper of top-ups, and the gate keeper reads the wallet to
  // rebuild it.
  const wallets = new WalletService(db, (orgId, amount) => gateKeeper.credit(orgId, amount));
  const gateKeeper: GateKeeper = new GateKeeper(gate, wallets, journal, log, {
    limitsEnabled: config.limits.enabled,
    billingEnabled: config.billingEnabled,
    renewEveryMs: Math.min(config.limits.concurrencyLeaseMs, config.holdLeaseMs),
    rebuildGraceMs: config.rebuildGraceMs,
    monthToDate: (keyId, monthStart) => keyTokensSince(db, keyId, monthStart),
    projectBudgets: (projectId) => requestPathCache.projectBudgets(projectId),
    budgetSpend: (scope, subjectId, window, ids) => budgetSpend(db, scope, subjectId, window, ids),
  });
  const keyByHash = (hash: string) => requestPathCache.keyByHash(hash);
  return {
    keys: new KeyService(db, config.keyPrefix, keyByHash, catalogChanged, config.keysPerAccount),
    catalog: new CatalogService(db, catalogChanged),
    requestPathCache,
    fleet,
    gateKeeper,
    wallets,
    journal,
    applier: new ChargeApplier(journal, wallets, storeOutage, log, {
      applied: (records) => gateKeeper.written(records),
    }),
    usageReports: new UsageReports(db),
    books: new Books(db),
    budgets: new BudgetService(db, catalogChanged, gateKeeper.gate),
    cache: createResponseCache({ redis, prefix: config.limits.redisPrefix, ...config.cache }),
    responseStore: new DatabaseResponseStore(db, config.responses),
  };
}

/** People's services: users and their passwords, sign-in sessions and counters, organizations and projects. */
function createPeopleServices(
  config: Config,
  db: Database,
  redis: Redis | null,
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

/** The control plane's services: clusters and their nodes' keys, stacks, costs, and the runs that apply stacks. */
function createPlatformServices(config: Config, db: Database, log: Logger): PlatformServices {
  const identity = new ClusterIdentity({ db, config: config.nodeAccess, log });
  const clusters = new ClusterService(db, {
    nodeAccess: config.nodeAccess,
    reservedHosts: reservedHostsOf(config),
    identity,
  });
  const stacks = new StackCatalog(db, {
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
    costs: new CostService(db),
    runs,
    clusterIdentity: identity,
    runWorker: new RunWorker({
      db,
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

/** The gateway's own host names, which no cluster's public URLs may take: its public URL's, and localhost. */
function reservedHostsOf(config: Config): string[] {
  const hosts = ['localhost'];
  if (config.publicUrl) hosts.push(new URL(config.publicUrl).hostname.toLowerCase());
  return hosts;
}
