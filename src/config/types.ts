/** Every setting as the gateway uses it, made by `loadConfig` (`index.ts`) from the environment (`settings.ts`). */

/** How replicas are chosen (TOLLGATE_ROUTING_*; see docs/settings.md). */
export interface RoutingSettings {
  /** scored: metrics and prefix affinity; least-loaded: fewest in flight from this gateway; round-robin: in turn. */
  policy: 'scored' | 'least-loaded' | 'round-robin';
  scrapeMs: number;
  queueWeight: number;
  kvWeight: number;
  prefixWeight: number;
  sessionWeight: number;
  prefixBlockChars: number;
  prefixEntries: number;
  prefixTtlMs: number;
  /** Requests in flight a replica may have beyond the least busy one and still win on prefix or session affinity (TOLLGATE_ROUTING_AFFINITY_SLACK, 2 when not given). */
  affinitySlack?: number;
}

/** TOLLGATE_FLOW_*: how requests wait when the fleet is full (docs/fair-sharing.md). */
export interface FlowSettings {
  /** Off: every request goes to the engines at once, as before flow control (TOLLGATE_FLOW_CONTROL=off). */
  enabled: boolean;
  /** Requests one organization may have waiting, over every model and band (TOLLGATE_FLOW_QUEUE_PER_ORG). */
  queuePerOrg: number;
  /** Requests waiting in all (TOLLGATE_FLOW_QUEUE_TOTAL). */
  queueTotal: number;
  /** The longest a request waits before it is refused as overloaded (TOLLGATE_FLOW_MAX_WAIT_MS). */
  maxWaitMs: number;
  /** What a prompt token and a generated token weigh in the fair share (TOLLGATE_FLOW_INPUT_WEIGHT, _OUTPUT_WEIGHT). */
  inputWeight: number;
  outputWeight: number;
  /** How often a model with waiting requests looks for room it was not told of (TOLLGATE_FLOW_POLL_MS). */
  pollMs: number;
}

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
  redisUrl?: string;
  /** Folder for PGlite's files and the generated operator token. `memory://` keeps PGlite in memory. */
  dataDir: string;
  /** PostgreSQL's connections for reports and exports, apart from the request path's, and their statement timeout. */
  reports: { poolSize: number; statementTimeoutMs: number };
  adminToken?: string;
  keyPrefix: string;
  /** TOLLGATE_KEYS_PER_ACCOUNT: live keys one user (or an organization's service account, for keys made for no user) may hold. */
  keysPerAccount: number;
  enginesFile: string;
  maxBodyBytes: number;
  /** TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES: the largest body `/v1/messages/count_tokens` reads (413 naming it above). */
  countTokensMaxBodyBytes: number;
  /** TOLLGATE_MAX_JSON_DEPTH: how deep a billed request's JSON body may nest (400 past it, checked before any other work). */
  maxJsonDepth: number;
  /** The most sequences one request may ask an engine to generate (`n`, `best_of`): each is billed, and each loads the engine. */
  maxChoices: number;
  /** Bounds on what the Messages and Responses translations walk, checked before any work that grows with them. */
  translation: TranslationBounds;
  /** What is read and discarded of a body refused as too large, so the client reads the 413 (`shared/http/request.ts`). */
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
    /** How often Docker engines reconcile their containers and health-check replicas (and `urls`/`dns` engines check their servers). */
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
    /** The in-memory cache (no Redis) holds at most this many bytes; the least recently used go first. */
    maxBytes: number;
  };
  requestData: {
    /** Stored request and response bodies are deleted after this many days. */
    retentionDays: number;
    /** Each stored body is cut to this many bytes. */
    maxBytes: number;
  };
  /**
   * Months of per-request usage records kept before the current one; older months are dropped whole, their
   * rollups and the ledger kept (`billing/usage-partitions.ts`). 0: never dropped.
   */
  usageDetailRetentionMonths: number;
  /** Stored Responses (`gateway/responses/store.ts`): how long they are kept, and how large they and a conversation may grow. */
  responses: {
    /** A stored response is gone this many days after it was made (TOLLGATE_RESPONSES_RETENTION_DAYS). */
    retentionDays: number;
    /** One stored response, its input and output as JSON text, at most this many bytes (TOLLGATE_RESPONSES_MAX_BYTES). */
    maxBytes: number;
    /** One organization's stored responses together, at most this many bytes (TOLLGATE_RESPONSES_ORG_MAX_BYTES). */
    orgMaxBytes: number;
    /** A conversation continued by `previous_response_id` reaches back at most this many turns (TOLLGATE_RESPONSES_CHAIN_MAX_TURNS)… */
    chainMaxTurns: number;
    /** …and at most this many stored bytes (TOLLGATE_RESPONSES_CHAIN_MAX_BYTES). */
    chainMaxBytes: number;
    /** How long a save may wait, on a busy gateway, for others to be written with it in one statement (TOLLGATE_RESPONSES_SAVE_WAIT_MS). */
    waitMs: number;
  };
  /** Conversations (`gateway/conversations/store.ts`): how long they are kept and how large they may grow. */
  conversations: {
    /** A conversation is gone this many days after its last change (TOLLGATE_CONVERSATIONS_RETENTION_DAYS). */
    retentionDays: number;
    /** Live conversations one organization may have (TOLLGATE_CONVERSATIONS_ORG_MAX). */
    orgMax: number;
    /** Items one conversation may hold (TOLLGATE_CONVERSATIONS_MAX_ITEMS). */
    maxItems: number;
    /** Bytes of JSON its items may hold together (TOLLGATE_CONVERSATIONS_MAX_BYTES). */
    maxBytes: number;
  };
  /** false: no wallet holds, charges or usage records (benchmarks only: requests are served unbilled). */
  billingEnabled: boolean;
  /**
   * This deployment's name, on every container it runs, so that deployments sharing a Docker host
   * leave each other's alone. Default: `d` + 8 hex digits of a hash of the database URL (password
   * left out) or the data folder.
   */
  deployment: string;
  /** Origins a browser may call /v1 from: '*' (any), [] (none), or a list. Never with credentials. */
  corsOrigins: '*' | string[];
  /** On SIGTERM, how long requests in flight may run on before they are cut (and billed for what they used). */
  shutdownGraceMs: number;
  /** A wallet hold expires this long after it was taken or last renewed; a dead process's holds are given back within two leases. */
  holdLeaseMs: number;
  /**
   * A running stream's usage is appended to the charge journal after this many generated tokens or this long
   * (whichever comes first), so that a replica killed mid-stream still bills it on its next start, up to the last
   * checkpoint (`billing/stream-checkpoints.ts`).
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
  /** Adding a stack by URL: whether http:// and private, loopback or link-local addresses are allowed (both off by default: server-side request forgery). */
  stackDownloads: { allowHttp: boolean; allowPrivate: boolean };
  /** How the platform reaches nodes (`src/platform/clusters/node-access.ts`). */
  nodeAccess: {
    /** Seals operators' node credentials at rest (AES-256-GCM); unset: nodes cannot be given SSH access. */
    credentialsKey?: Buffer;
    /** How long one SSH connection to a node (connect, authenticate, run) may take. */
    sshTimeoutMs: number;
  };
  /**
   * Stack uploads (a .zip sent, or fetched by URL): each holds its package and what it unpacks (tens of MiB)
   * in memory while it is read, so this process reads at most `inFlight` at once, and at most
   * `inFlightPerUser` for one user; a user keeps at most `stacksPerUser` private stacks, of at most
   * `stacksBytesPerUser` bytes in all.
   */
  uploads: { inFlight: number; inFlightPerUser: number; stacksPerUser: number; stacksBytesPerUser: number };
  /** Applying stacks to clusters (`src/platform/runs/`). */
  runs: {
    /** The OpenTofu or Terraform command line: a path or a command name; unset: `tofu` on PATH, else `terraform`. */
    tofuBin?: string;
    /** Runs this process applies at once; 0: it applies none (another process's workers do). */
    workers: number;
    /** A run still going after this long is stopped and FAILED. */
    timeoutMs: number;
    /** Where each run's module is unpacked, in a fresh folder removed afterwards. */
    workDir: string;
    /** How often a worker looks for queued runs, for cancel requests, and renews its claims. */
    pollMs: number;
    /** A claim not renewed for this long (its worker died) fails the run. */
    leaseMs: number;
    /** After SIGINT (cancel, timeout), how long the tool has to stop before SIGKILL. */
    killGraceMs: number;
    /** Environment variables passed to the tool besides PATH, HOME and the TF_ ones it needs (TOLLGATE_RUN_ENV), with their values. */
    passEnv: Record<string, string>;
    /** The gateway's PATH: where `tofu` or `terraform` is looked for, and the tool's own PATH. */
    searchPath: string;
    /**
     * What a run's tool runs in (`src/platform/runs/sandbox/`): docker (a container per run),
     * bubblewrap, none (the loudly named opt-out), or auto: docker when the engine at `dockerHost`
     * answers and holds `image`, else bubblewrap.
     */
    sandbox: 'auto' | 'docker' | 'bubblewrap' | 'none';
    /** The runner image of the docker sandbox (compose/runner.Dockerfile): the tool, a shell, coreutils, socat. */
    image: string;
    /** The Docker engine the docker sandbox uses, on this machine (`unix://` and the socket's path; engines.json's `docker_host` syntax). */
    dockerHost: string;
    /** The host user and group the sandbox runs as when the gateway is root (inside it is always 65534). */
    sandboxUser: { uid: number; gid: number };
    /** The cgroup (relative to each hierarchy's root) under which each run gets its own group with the bounds below. */
    cgroup: string;
    /** Bounds on one run: exceeding one fails it with a sentence naming the bound. */
    bounds: { memoryBytes: number; processes: number; cpus: number; cpuSeconds: number; diskBytes: number };
    /**
     * Bounds on what a run hands back, each read from a stream with its bound: its log (past it the
     * log is cut, saying so, and the run goes on), its state (past it the run fails and the state
     * is not kept), each output and the outputs together (past either the run is applied without
     * them, saying so).
     */
    produced: { logBytes: number; stateBytes: number; outputBytes: number; outputsBytes: number };
    /** Where a run may connect: `host:port` names (registries, mirrors), and these ports on its cluster's nodes. */
    egress: { hosts: Array<{ host: string; port: number }>; nodePorts: number[] };
    /** A folder of providers in the filesystem-mirror layout, mounted read-only into every run. */
    providerMirror?: string;
    /** An OpenTofu/Terraform CLI configuration file (a network mirror, say), mounted read-only into every run. */
    cliConfig?: string;
    /** Extra folders mounted into every run of every organization (read-only unless `rw`). */
    mounts: Array<{ host: string; sandbox: string; writable: boolean }>;
  };
  observability: {
    /** false: no request metrics are recorded and `/metrics` is not served (benchmarks: the cost of metrics). */
    metrics: boolean;
    /**
     * null: `/metrics` is served on the main port to the operator token. A port: served there,
     * without a token, on `metricsHost` (and not on the main port), for a Prometheus that cannot
     * send a token.
     */
    metricsPort: number | null;
    metricsHost: string;
    /** Token and spend counters carry an `organization` label (one series per organization and model: keep it off with many tenants). */
    orgLabel: boolean;
    /**
     * Traces, on when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set, unless
     * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, sent to `url` (the traces endpoint, or
     * the endpoint + `/v1/traces`). The OTLP exporter reads the other standard OTEL_EXPORTER_OTLP_*
     * variables (headers, timeout, compression) itself.
     */
    tracing: { url: string; serviceName: string; sampler: string; samplerRatio: number } | null;
  };
  people: {
    /** scrypt's cost as log2 N for new password hashes (15: 32 MiB, about 0.1 s each). */
    passwordCost: number;
    /** A portal session unused this long ends. */
    sessionIdleMs: number;
    /** A portal session ends this long after sign-in. */
    sessionMaxMs: number;
    /** Proxies whose X-Forwarded-For (and X-Forwarded-Proto) are believed: addresses, CIDR ranges, or proxy-addr's names. Empty: none. */
    trustedProxies: string[];
  };
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
 * The shape bounds of a Messages or Responses body (TOLLGATE_TRANSLATION_*): checked with the body's fields, before
 * the key's limits are taken or anything is translated; a body past one is a 400 naming its setting.
 */
export interface TranslationBounds {
  /** A tool's name, a namespace's name, and an item's or a call's id, at most this many characters. */
  maxNameChars: number;
  /** `messages` or `input` items, and content blocks or parts counted with them, at most this many. */
  maxItems: number;
  /** Tools, a namespace's functions each counted, at most this many. */
  maxTools: number;
}
