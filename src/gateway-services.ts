import { CatalogService } from './gateway/catalog/service.js';
import type { Config } from './config/index.js';
import type { Database } from './shared/db/client.js';
import { CacheSalts } from './gateway/engines/cache-salts.js';
import type { Fleet } from './gateway/engines/fleet.js';
import type { Logger } from './shared/http/log.js';
import { KeyService } from './gateway/keys/service.js';
import { keyTokensSince } from './gateway/billing/monthly-tokens.js';
import { HeapGrowth } from './shared/heap-growth.js';
import { Books } from './gateway/billing/books.js';
import { UsageReports } from './gateway/billing/usage-reports.js';
import type { RedisClient } from './shared/db/redis.js';
import { createResponseCache, type ResponseCache } from './gateway/cache/response-cache.js';
import { ChargeApplier } from './gateway/billing/charge-applier.js';
import type { ChargeJournal } from './gateway/billing/journal.js';
import { GateKeeper } from './gateway/admission/gate-keeper.js';
import { budgetSpend } from './gateway/billing/budget-spend.js';
import { BudgetService } from './gateway/billing/budgets.js';
import { createMemoryGate } from './gateway/admission/memory-gate.js';
import { createRedisGate } from './gateway/admission/redis-gate.js';
import { WalletService } from './gateway/billing/wallet.js';
import type { Metrics } from './shared/observability/metrics.js';
import type { Tracing } from './shared/observability/tracing.js';
import { OutageLog } from './shared/http/outage.js';
import { RequestPathCache } from './gateway/catalog/request-path-cache.js';
import { DatabaseResponseStore } from './gateway/stored-responses/database-store.js';
import type { ResponseStore } from './gateway/stored-responses/store.js';
import { BackgroundStore } from './gateway/stored-responses/background-store.js';
import { cancelsRequested } from './gateway/stored-responses/background-cancels.js';
import { BackgroundResponses } from './gateway/requests/responses/background.js';
import { DatabaseConversationStore } from './gateway/conversations/database-store.js';
import type { ConversationStore } from './gateway/conversations/store.js';
import { DatabaseFileStore } from './gateway/files/database-store.js';
import type { FileStore } from './gateway/files/store.js';
import type { BlobStore } from './shared/blobs/blob-store.js';
import { FolderBlobStore } from './shared/blobs/folder-store.js';
import { Batches } from './gateway/batches/service.js';
import { FlowControl } from './gateway/flow/flow-control.js';
import { flowPeers } from './gateway/flow/flow-peers.js';
import { flowMetrics } from './gateway/flow/flow-metrics.js';
import { EngineAgents } from './gateway/proxy/engine-agents.js';
import { RepeatedMembers } from './shared/http/repeated-members.js';
import { TranslationJsonCache } from './gateway/requests/translation-json.js';
import { DetachedCalls } from './gateway/requests/detached-calls.js';

// The data plane's group of `Services` (`services.ts`): keys, models, admission, the money of a
// billed call, caches, stored responses, the work that runs with no client.

export interface ServiceParts {
  config: Config;
  db: Database;
  /** Reports' and exports' own connections (`Store.reports`); default: `db`. */
  reportsDb?: Database;
  log: Logger;
  fleet: Fleet;
  adminToken: string;
  /** Where limits and spendable amounts are kept; null: in this process (the embedded default). */
  redis?: RedisClient | null;
  /** Opened by the caller (it reads the data folder): `ChargeJournal.open`. */
  journal: ChargeJournal;
  /** Opened by the caller (`shared/blobs/open.ts`), which closes it; default: a temporary folder. */
  blobs?: BlobStore;
  /** Started by the caller when tracing is configured (`observability/tracing.ts`). */
  tracing?: Tracing | null;
  /** The process's heap growth (`shared/heap-growth.ts`); default: left to node. */
  heapGrowth?: HeapGrowth;
}

/**
 * The data plane (`gateway/`): keys, models, admission, the money of a billed call, caches, stored
 * responses.
 */
export interface GatewayServices {
  keys: KeyService;
  catalog: CatalogService;
  /**
   * Keys, models, prices and projects as the request path reads them, kept in this process; see
   * `catalog/request-path-cache.ts`.
   */
  requestPathCache: RequestPathCache;
  fleet: Fleet;
  cacheSalts: CacheSalts;
  /**
   * Keep-alive connections to the engines, reused by every call (keyed by the engine's address,
   * bounded by `IDLE_CONNECTIONS_PER_ENGINE` idle connections each), and the engines' URLs parsed
   * once (keyed by URL, bounded by `PARSED_URLS_KEPT`): `proxy/engine-agents.ts`.
   */
  engineAgents: EngineAgents;
  /**
   * The four per-key limits and the wallet hold, decided in one step; see
   * `admission/gate-keeper.ts`.
   */
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
  /** Lowered while a long download is written (`shared/heap-growth.ts`). */
  heapGrowth: HeapGrowth;
  /** Budgets per key and per project, read with their spend and set (`billing/budgets.ts`). */
  budgets: BudgetService;
  /** The per-key response cache, in Redis or in memory. */
  cache: ResponseCache;
  /**
   * Stored Responses (`/v1/responses` with `store`), in the database: any process continues a
   * conversation.
   */
  responseStore: ResponseStore;
  /**
   * Conversations (`/v1/conversations`, `conversation` on `/v1/responses`), in the database: any
   * process appends.
   */
  conversationStore: ConversationStore;
  /** Background responses (`background: true`): queued, run, their leases kept and taken over. */
  backgroundResponses: BackgroundResponses;
  /** Uploaded files (`/v1/files`): their rows in the database, their bytes in `blobs`. */
  fileStore: FileStore;
  /** Large bytes outside the database (`shared/blobs/`): a folder embedded, else PostgreSQL. */
  blobs: BlobStore;
  /** Batches (`/v1/batches`): their rows, and the runner that runs their lines on every replica. */
  batches: Batches;
  /** Where requests wait when the fleet is full, and in what order (`flow/flow-control.ts`). */
  flow: FlowControl;
  /**
   * The calls this replica runs with no client, stopped when their key or model is (one entry a
   * call under way, `requests/detached-calls.ts`).
   */
  detachedCalls: DetachedCalls;
  /**
   * The billed routes' bodies read without parsing again what a key sent alike last time (its
   * tools, its system prompt, its conversation). Keyed by the API key's hash, and only once the key
   * is verified; bounded by `SENDERS_KEPT` keys (the least recently seen forgotten first),
   * `HISTORIES_KEPT` conversations each and `MAX_KEPT_BYTES` in all
   * (`shared/http/repeated-members.ts`).
   */
  repeatedMembers: RepeatedMembers;
  /**
   * Messages' and Responses' translations, their JSON written once for the turns that follow. Keyed
   * by organization; bounded by `ORGANIZATIONS_KEPT` organizations, `CONVERSATIONS_KEPT_EACH`
   * conversations each, `MAX_KEPT_BYTES_EACH` a conversation and `MAX_KEPT_BYTES` in all
   * (`requests/translation-json.ts`).
   */
  translations: TranslationJsonCache;
}

/**
 * The data plane's services: keys, models, admission and the wallets it holds, the charge path,
 * caches.
 */
export function createGatewayServices(
  parts: ServiceParts,
  requestPathCache: RequestPathCache,
  storeOutage: OutageLog,
  catalogChanged: () => void,
  metrics: Metrics | null,
): GatewayServices {
  const { config, db, log, fleet, adminToken, redis = null, journal, blobs = new FolderBlobStore(null) } = parts;
  const gateOptions = { concurrencyLeaseMs: config.limits.concurrencyLeaseMs, holdLeaseMs: config.holdLeaseMs };
  const redisOptions = { prefix: config.limits.redisPrefix, rebuildGraceMs: config.rebuildGraceMs, ...gateOptions };
  const gate = redis ? createRedisGate(redis, redisOptions) : createMemoryGate(gateOptions);
  const detachedCalls = new DetachedCalls(db, log, config.catalogPollMs);
  // The wallet service tells the gate keeper of top-ups, and the gate keeper reads the wallet to
  // rebuild it.
  // A wallet an adjustment spent stops its organization's calls with no client here at once.
  const wallets = new WalletService(db, async (orgId, amount) => {
    await gateKeeper.credit(orgId, amount);
    if (amount < 0n) await detachedCalls.walletChanged();
  });
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
  const flowEvents =
    metrics && flowMetrics(metrics.registry, (): FlowControl => flow, { orgLabel: config.observability.orgLabel });
  const flow: FlowControl = new FlowControl(config.flow, fleet, flowEvents ?? undefined, flowPeers(redis, config, log));
  const fileStore = new DatabaseFileStore(db, blobs, config.files);
  const batchParts = { files: fileStore, blobs, log, settings: config.batches };
  requestPathCache.onChange(() => void detachedCalls.recheck());
  return {
    keys: new KeyService(db, config.keyPrefix, keyByHash, catalogChanged, config.keysPerAccount),
    catalog: new CatalogService(db, catalogChanged),
    requestPathCache,
    fleet,
    cacheSalts: new CacheSalts(adminToken),
    engineAgents: new EngineAgents(),
    gateKeeper,
    wallets,
    journal,
    applier: new ChargeApplier(journal, wallets, storeOutage, log, {
      applied: (records) => gateKeeper.written(records),
    }),
    usageReports: new UsageReports(parts.reportsDb ?? db),
    books: new Books(parts.reportsDb ?? db),
    heapGrowth: parts.heapGrowth ?? new HeapGrowth(false),
    budgets: new BudgetService(db, catalogChanged, gateKeeper.gate),
    cache: createResponseCache({ redis, prefix: config.limits.redisPrefix, ...config.cache }),
    responseStore: new DatabaseResponseStore(db, config.responses),
    conversationStore: new DatabaseConversationStore(db, config.conversations),
    backgroundResponses: new BackgroundResponses(new BackgroundStore(db, config.responses), log, (replica, ids) =>
      cancelsRequested(db, replica, ids),
    ),
    fileStore,
    blobs,
    batches: new Batches(db, batchParts, metrics?.registry ?? null),
    flow,
    detachedCalls,
    repeatedMembers: new RepeatedMembers(),
    translations: new TranslationJsonCache(),
  };
}
