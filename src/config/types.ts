/**
 * Every setting as the gateway uses it, made by `loadConfig` (`index.ts`) from the environment
 * (`settings.ts`).
 */

import type { FlowSettings, RoutingSettings } from './fleet-types.js';
import type { NodeAccessSettings, PeopleSettings, RunSettings } from './platform-types.js';
import type { BatchesSettings, ConversationsSettings, FilesSettings, ResponsesSettings } from './stored-types.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

/**
 * How much of a body refused as too large is still read (and thrown away)
 * before the connection closes, and for how long: real clients write the whole
 * body before they read an answer, and a socket closed under them is an EPIPE
 * instead of the 413.
 */
export interface BodyDrain {
  bytes: number;
  ms: number;
}

export interface Config {
  port: number;
  host: string;
  /** PostgreSQL connection string; when absent the gateway uses PGlite in `dataDir`. */
  databaseUrl?: string;
  /**
   * How to reach Redis, when it is used (REDIS_URL, or a cluster's nodes, or sentinels): ioredis's
   * own Cluster or Sentinel client; `url` then gives only the credentials, TLS and database.
   */
  redis?: RedisTarget;
  /** Folder for PGlite's files and the generated operator token. `memory://` keeps PGlite in memory. */
  dataDir: string;
  /**
   * PostgreSQL's connections for reports and exports, apart from the request path's, and their
   * statement timeout.
   */
  reports: { poolSize: number; statementTimeoutMs: number };
  adminToken?: string;
  keyPrefix: string;
  /**
   * TOLLGATE_KEYS_PER_ACCOUNT: live keys one user (or an organization's service account, for keys
   * made for no user) may hold.
   */
  keysPerAccount: number;
  enginesFile: string;
  maxBodyBytes: number;
  /**
   * TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES: the largest body `/v1/messages/count_tokens` reads (413
   * naming it above).
   */
  countTokensMaxBodyBytes: number;
  /**
   * TOLLGATE_MAX_JSON_DEPTH: how deep a billed request's JSON body may nest (400 past it, checked
   * before any other work).
   */
  maxJsonDepth: number;
  /**
   * The most sequences one request may ask an engine to generate (`n`, `best_of`): each is billed,
   * and each loads the engine.
   */
  maxChoices: number;
  /**
   * Bounds on what the Messages and Responses translations walk, checked before any work that grows
   * with them.
   */
  translation: TranslationBounds;
  /**
   * What is read and discarded of a body refused as too large, so the client reads the 413
   * (`shared/http/request.ts`).
   */
  oversizeDrain: BodyDrain;
  upstreamTimeoutMs: number;
  seedDemo: boolean;
  currency: string;
  /** The address printed in the first-start instructions; defaults to http://127.0.0.1:PORT. */
  publicUrl?: string;
  logLevel: LogLevel;
  simulator: { ttftMs: number; itlMs: number };
  /** How Docker engines choose a replica for a request, and how often they scrape replicas' metrics. */
  routing: RoutingSettings;
  /** Flow control: how requests wait when the fleet is full (docs/fair-sharing.md). */
  flow: FlowSettings;
  engines: {
    /**
     * How often Docker engines reconcile their containers and health-check replicas (and
     * `urls`/`dns` engines check their servers).
     */
    pollMs: number;
    /** How often a `dns` engine resolves its name again: replicas appear and go within this. */
    dnsRefreshMs: number;
    /** On shutdown, leave containers running (a restart adopts them) or stop and remove them. */
    onShutdown: 'leave' | 'stop';
  };
  cache: {
    ttlSeconds: number;
    /** Answers larger than this are not cached. */
    maxEntryBytes: number;
    /**
     * The in-memory cache (no Redis) holds at most this many bytes; the least recently used go
     * first.
     */
    maxBytes: number;
  };
  requestData: {
    /** Stored request and response bodies are deleted after this many days. */
    retentionDays: number;
    /** Each stored body is cut to this many bytes. */
    maxBytes: number;
  };
  /**
   * Months of per-request usage records kept before the current one; older months are dropped
   * whole, their rollups and the ledger kept (`billing/usage-partitions.ts`). 0: never dropped.
   */
  usageDetailRetentionMonths: number;
  /**
   * Stored Responses (`gateway/stored-responses/store.ts`): how long they are kept, and how large
   * they and a conversation may grow.
   */
  responses: ResponsesSettings;
  /**
   * Conversations (`gateway/conversations/store.ts`): how long they are kept and how large they may
   * grow.
   */
  conversations: ConversationsSettings;
  /**
   * Uploaded files (`/v1/files`, `gateway/files/`): how large one may be, and how many an
   * organization keeps.
   */
  files: FilesSettings;
  /** Batches (`/v1/batches`, `gateway/batches/`): in flight per organization, the runner's bounds. */
  batches: BatchesSettings;
  /**
   * false: no wallet holds, charges or usage records (benchmarks only: requests are served
   * unbilled).
   */
  billingEnabled: boolean;
  /**
   * This deployment's name, on every container it runs, so that deployments sharing a Docker host
   * leave each other's alone. Default: `d` + 8 hex digits of a hash of the database URL (password
   * left out) or the data folder.
   */
  deployment: string;
  /** Origins a browser may call /v1 from: '*' (any), [] (none), or a list. Never with credentials. */
  corsOrigins: '*' | string[];
  /**
   * On SIGTERM, how long requests in flight may run on before they are cut (and billed for what
   * they used).
   */
  shutdownGraceMs: number;
  /**
   * A wallet hold expires this long after it was taken or last renewed; a dead process's holds are
   * given back within two leases.
   */
  holdLeaseMs: number;
  /**
   * A running stream's usage is appended to the charge journal after this many generated tokens or
   * this long (whichever comes first), so that a replica killed mid-stream still bills it on its
   * next start, up to the last checkpoint (`billing/stream-checkpoints.ts`).
   */
  streamCheckpoint: { everyTokens: number; everyMs: number };
  /**
   * How often each replica reads the catalog version to drop its in-process cache of keys, models,
   * prices and projects (PostgreSQL only: an embedded store has no other writer). Bounds how long
   * a change made on another replica (a revoked key) takes to be seen.
   */
  catalogPollMs: number;
  /**
   * After Redis comes back empty (or on a Redis first used), admissions wait this long before
   * wallets are rebuilt, so every live replica's heartbeat (every second) reports its holds first.
   * 0 (the default): they do not wait; each count is rebuilt when first asked, and again when a
   * replica reports a hold it did not count (docs/production.md). Else keep it above one second.
   */
  rebuildGraceMs: number;
  /**
   * Adding a stack by URL: whether http:// and private, loopback or link-local addresses are
   * allowed (both off by default: server-side request forgery).
   */
  stackDownloads: { allowHttp: boolean; allowPrivate: boolean };
  /** How the platform reaches nodes (`src/platform/clusters/node-access.ts`). */
  nodeAccess: NodeAccessSettings;
  /**
   * Stack uploads (a .zip sent, or fetched by URL): each holds its package and what it unpacks
   * (tens of MiB) in memory while it is read, so this process reads at most `inFlight` at once, and
   * at most `inFlightPerUser` for one user; a user keeps at most `stacksPerUser` private stacks, of
   * at most `stacksBytesPerUser` bytes in all.
   */
  uploads: { inFlight: number; inFlightPerUser: number; stacksPerUser: number; stacksBytesPerUser: number };
  /**
   * The portal's pages of one organization read and drawn at once by this process (`perOrg`), and
   * how many more may wait their turn (`waitingPerOrg`; past it, 429): see `portal/page-gate.ts`.
   */
  portalPages: { perOrg: number; waitingPerOrg: number };
  /** Applying stacks to clusters (`src/platform/runs/`). */
  runs: RunSettings;
  observability: {
    /**
     * false: no request metrics are recorded and `/metrics` is not served (benchmarks: the cost of
     * metrics).
     */
    metrics: boolean;
    /**
     * null: `/metrics` is served on the main port to the operator token. A port: served there,
     * without a token, on `metricsHost` (and not on the main port), for a Prometheus that cannot
     * send a token.
     */
    metricsPort: number | null;
    metricsHost: string;
    /**
     * Token and spend counters carry an `organization` label (one series per organization and
     * model: keep it off with many tenants).
     */
    orgLabel: boolean;
    /**
     * Traces, on when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set, unless
     * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, sent to `url` (the traces endpoint, or
     * the endpoint + `/v1/traces`). The OTLP exporter reads the other standard OTEL_EXPORTER_OTLP_*
     * variables (headers, timeout, compression) itself.
     */
    tracing: { url: string; serviceName: string; sampler: string; samplerRatio: number } | null;
  };
  people: PeopleSettings;
  limits: {
    /** false turns every per-key limit off (for benchmarks, or behind another limiter). */
    enabled: boolean;
    /** Prefix of every Redis key the gateway writes, so several deployments can share one Redis. */
    redisPrefix: string;
    /** A concurrency slot of a gateway that died is freed after at most this long. */
    concurrencyLeaseMs: number;
    /** Completion tokens assumed for the pre-request token check when a request sets no max_tokens. */
    completionEstimate: number;
  };
}

/**
 * The shape bounds of a Messages or Responses body (TOLLGATE_TRANSLATION_*): checked with the
 * body's fields, before the key's limits are taken or anything is translated; a body past one is a
 * 400 naming its setting.
 */
export interface TranslationBounds {
  /** A tool's name, a namespace's name, and an item's or a call's id, at most this many characters. */
  maxNameChars: number;
  /** `messages` or `input` items, and content blocks or parts counted with them, at most this many. */
  maxItems: number;
  /** Tools, a namespace's functions each counted, at most this many. */
  maxTools: number;
}

/**
 * A Redis to connect to: one server (`url`), a Redis Cluster (`clusterNodes`) or one found by
 * Sentinel (`sentinels`).
 */
export interface RedisTarget {
  url?: string;
  /** Startup nodes of a Redis Cluster: ioredis learns the rest of the cluster from them. */
  clusterNodes?: Array<{ host: string; port: number }>;
  /**
   * Sentinels that name the master of `sentinelName`; the client follows a failover to the new
   * master.
   */
  sentinels?: Array<{ host: string; port: number }>;
  sentinelName: string;
  sentinelPassword?: string;
}
