import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { settingsSchema, type Settings } from './settings.js';
import type { Config } from './types.js';

export type { BodyDrain, Config, LogLevel, RoutingSettings } from './types.js';

/** The same store means the same deployment: replicas sharing a database share their engines' containers. */
function defaultDeployment(databaseUrl: string | undefined, dataDir: string): string {
  let identity: string;
  if (databaseUrl) {
    const url = new URL(databaseUrl);
    url.password = '';
    identity = url.toString();
  } else {
    identity = dataDir === 'memory://' ? dataDir : path.resolve(dataDir);
  }
  return `d${createHash('sha256').update(identity).digest('hex').slice(0, 8)}`;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Every setting of the gateway, read from the environment once and validated.
 * Nothing else in `src/` reads `process.env`: the parsed object is passed in.
 *
 * @example
 * const config = loadConfig(process.env);
 * console.log(config.port); // 8080 unless PORT is set
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const { settings: s, present } = readSettings(env);
  return Object.freeze({
    port: s.PORT,
    host: s.TOLLGATE_HOST,
    databaseUrl: s.DATABASE_URL,
    redisUrl: s.REDIS_URL,
    dataDir: s.TOLLGATE_DATA_DIR === 'memory://' ? s.TOLLGATE_DATA_DIR : path.resolve(s.TOLLGATE_DATA_DIR),
    reports: { poolSize: s.TOLLGATE_REPORTS_POOL_SIZE, statementTimeoutMs: s.TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS },
    adminToken: s.TOLLGATE_ADMIN_TOKEN,
    keyPrefix: s.TOLLGATE_KEY_PREFIX,
    keysPerAccount: s.TOLLGATE_KEYS_PER_ACCOUNT,
    enginesFile: path.resolve(s.TOLLGATE_ENGINES_FILE),
    maxBodyBytes: s.TOLLGATE_MAX_BODY_BYTES,
    countTokensMaxBodyBytes: s.TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES,
    maxJsonDepth: s.TOLLGATE_MAX_JSON_DEPTH,
    maxChoices: s.TOLLGATE_MAX_CHOICES,
    translation: {
      maxNameChars: s.TOLLGATE_TRANSLATION_MAX_NAME_CHARS,
      maxItems: s.TOLLGATE_TRANSLATION_MAX_ITEMS,
      maxTools: s.TOLLGATE_TRANSLATION_MAX_TOOLS,
    },
    oversizeDrain: { bytes: s.TOLLGATE_OVERSIZE_DRAIN_BYTES, ms: s.TOLLGATE_OVERSIZE_DRAIN_MS },
    upstreamTimeoutMs: s.TOLLGATE_UPSTREAM_TIMEOUT_MS,
    seedDemo: s.TOLLGATE_SEED_DEMO,
    currency: s.TOLLGATE_CURRENCY,
    publicUrl: s.TOLLGATE_PUBLIC_URL,
    logLevel: s.TOLLGATE_LOG_LEVEL,
    simulator: { ttftMs: s.TOLLGATE_SIM_TTFT_MS, itlMs: s.TOLLGATE_SIM_ITL_MS },
    engines: {
      pollMs: s.TOLLGATE_ENGINE_POLL_MS,
      dnsRefreshMs: s.TOLLGATE_ENGINE_DNS_REFRESH_MS,
      onShutdown: s.TOLLGATE_ENGINES_ON_SHUTDOWN,
    },
    routing: routingConfig(s),
    flow: flowConfig(s),
    cache: {
      ttlSeconds: s.TOLLGATE_CACHE_TTL_SECONDS,
      maxEntryBytes: s.TOLLGATE_CACHE_MAX_ENTRY_BYTES,
      maxBytes: s.TOLLGATE_CACHE_MAX_BYTES,
    },
    requestData: { retentionDays: s.TOLLGATE_REQUEST_DATA_RETENTION_DAYS, maxBytes: s.TOLLGATE_REQUEST_DATA_MAX_BYTES },
    usageDetailRetentionMonths: s.TOLLGATE_USAGE_DETAIL_RETENTION_MONTHS,
    ...storedConfig(s),
    billingEnabled: s.TOLLGATE_BILLING === 'on',
    shutdownGraceMs: s.TOLLGATE_SHUTDOWN_GRACE_MS,
    deployment: s.TOLLGATE_DEPLOYMENT ?? defaultDeployment(s.DATABASE_URL, s.TOLLGATE_DATA_DIR),
    corsOrigins:
      s.TOLLGATE_CORS_ORIGINS === '*'
        ? '*'
        : s.TOLLGATE_CORS_ORIGINS === 'none'
          ? []
          : s.TOLLGATE_CORS_ORIGINS.split(',').map((origin) => origin.trim()),
    holdLeaseMs: s.TOLLGATE_HOLD_LEASE_MS,
    streamCheckpoint: { everyTokens: s.TOLLGATE_STREAM_CHECKPOINT_TOKENS, everyMs: s.TOLLGATE_STREAM_CHECKPOINT_MS },
    catalogPollMs: s.TOLLGATE_CATALOG_POLL_MS,
    rebuildGraceMs: s.TOLLGATE_REBUILD_GRACE_MS,
    stackDownloads: {
      allowHttp: s.TOLLGATE_STACK_URL_ALLOW_HTTP === 'true',
      allowPrivate: s.TOLLGATE_STACK_URL_ALLOW_PRIVATE === 'true',
    },
    nodeAccess: {
      credentialsKey:
        s.TOLLGATE_NODE_CREDENTIALS_KEY === undefined
          ? undefined
          : Buffer.from(s.TOLLGATE_NODE_CREDENTIALS_KEY, 'base64'),
      sshTimeoutMs: s.TOLLGATE_NODE_SSH_TIMEOUT_MS,
    },
    uploads: uploadsConfig(s),
    runs: runsConfig(s, present),
    observability: observabilityConfig(s),
    people: peopleConfig(s),
    limits: {
      enabled: s.TOLLGATE_LIMITS === 'on',
      redisPrefix: s.TOLLGATE_REDIS_PREFIX,
      concurrencyLeaseMs: s.TOLLGATE_CONCURRENCY_LEASE_MS,
      completionEstimate: s.TOLLGATE_COMPLETION_ESTIMATE,
    },
  });
}

/** Stack uploads: how many one process and one user read at once, and how much one user keeps (TOLLGATE_UPLOADS_*, TOLLGATE_STACKS_*). */
function uploadsConfig(s: Settings): Config['uploads'] {
  return {
    inFlight: s.TOLLGATE_UPLOADS_IN_FLIGHT,
    inFlightPerUser: s.TOLLGATE_UPLOADS_IN_FLIGHT_PER_USER,
    stacksPerUser: s.TOLLGATE_STACKS_PER_USER,
    stacksBytesPerUser: s.TOLLGATE_STACKS_BYTES_PER_USER,
  };
}

/** Stored Responses: how long they are kept, how large one and a conversation may be (TOLLGATE_RESPONSES_*). */
/** What the gateway keeps for its clients: stored Responses and conversations. */
function storedConfig(s: Settings): Pick<Config, 'responses' | 'conversations'> {
  return { responses: responsesConfig(s), conversations: conversationsConfig(s) };
}

function conversationsConfig(s: Settings): Config['conversations'] {
  return {
    retentionDays: s.TOLLGATE_CONVERSATIONS_RETENTION_DAYS,
    orgMax: s.TOLLGATE_CONVERSATIONS_ORG_MAX,
    maxItems: s.TOLLGATE_CONVERSATIONS_MAX_ITEMS,
    maxBytes: s.TOLLGATE_CONVERSATIONS_MAX_BYTES,
  };
}

function responsesConfig(s: Settings): Config['responses'] {
  return {
    retentionDays: s.TOLLGATE_RESPONSES_RETENTION_DAYS,
    maxBytes: s.TOLLGATE_RESPONSES_MAX_BYTES,
    orgMaxBytes: s.TOLLGATE_RESPONSES_ORG_MAX_BYTES,
    chainMaxTurns: s.TOLLGATE_RESPONSES_CHAIN_MAX_TURNS,
    chainMaxBytes: s.TOLLGATE_RESPONSES_CHAIN_MAX_BYTES,
    waitMs: s.TOLLGATE_RESPONSES_SAVE_WAIT_MS,
  };
}

/** The environment's settings, validated (each problem named), with what is set in it (an empty string is unset). */
function readSettings(env: Record<string, string | undefined>): {
  settings: Settings;
  present: Record<string, string | undefined>;
} {
  // Empty strings count as unset, as they do for most tools reading the environment.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = settingsSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid settings:\n${lines.join('\n')}`);
  }
  const s = parsed.data;
  if (s.DATABASE_URL && !s.TOLLGATE_ADMIN_TOKEN) {
    // Each process would make a token of its own: the operator API and the portal's form protection
    // would answer 401 from all but one.
    throw new ConfigError(
      'TOLLGATE_ADMIN_TOKEN is not set: with DATABASE_URL every gateway process must share one operator token. Set TOLLGATE_ADMIN_TOKEN to the same secret of at least 16 characters on each process (openssl rand -base64 32 makes one).',
    );
  }
  return { settings: s, present };
}

/** How requests wait when the fleet is full (TOLLGATE_FLOW_*, docs/fair-sharing.md). */
function flowConfig(s: Settings): Config['flow'] {
  return {
    enabled: s.TOLLGATE_FLOW_CONTROL === 'on',
    queuePerOrg: s.TOLLGATE_FLOW_QUEUE_PER_ORG,
    queueTotal: s.TOLLGATE_FLOW_QUEUE_TOTAL,
    maxWaitMs: s.TOLLGATE_FLOW_MAX_WAIT_MS,
    inputWeight: s.TOLLGATE_FLOW_INPUT_WEIGHT,
    outputWeight: s.TOLLGATE_FLOW_OUTPUT_WEIGHT,
    pollMs: s.TOLLGATE_FLOW_POLL_MS,
  };
}

/** How Docker engines choose a replica, and how often they scrape replicas' metrics (TOLLGATE_ROUTING_*). */
function routingConfig(s: Settings): Config['routing'] {
  return {
    policy: s.TOLLGATE_ROUTING_POLICY,
    scrapeMs: s.TOLLGATE_ROUTING_SCRAPE_MS,
    queueWeight: s.TOLLGATE_ROUTING_QUEUE_WEIGHT,
    kvWeight: s.TOLLGATE_ROUTING_KV_WEIGHT,
    prefixWeight: s.TOLLGATE_ROUTING_PREFIX_WEIGHT,
    sessionWeight: s.TOLLGATE_ROUTING_SESSION_WEIGHT,
    prefixBlockChars: s.TOLLGATE_ROUTING_PREFIX_BLOCK_CHARS,
    prefixEntries: s.TOLLGATE_ROUTING_PREFIX_ENTRIES,
    prefixTtlMs: s.TOLLGATE_ROUTING_PREFIX_TTL_MS,
    affinitySlack: s.TOLLGATE_ROUTING_AFFINITY_SLACK,
  };
}

/** Passwords, sessions, and the proxies whose forwarded client address is believed. */
function peopleConfig(s: Settings): Config['people'] {
  return {
    passwordCost: s.TOLLGATE_PASSWORD_COST,
    sessionIdleMs: s.TOLLGATE_SESSION_IDLE_MINUTES * 60_000,
    sessionMaxMs: s.TOLLGATE_SESSION_MAX_HOURS * 3_600_000,
    trustedProxies: s.TOLLGATE_TRUSTED_PROXIES.split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  };
}

/** The runs' settings: the tool, the workers, and the sandbox a run executes in with its bounds and egress. */
function runsConfig(s: Settings, present: Record<string, string | undefined>): Config['runs'] {
  return {
    tofuBin: s.TOLLGATE_TOFU_BIN,
    workers: s.TOLLGATE_RUN_WORKERS,
    timeoutMs: s.TOLLGATE_RUN_TIMEOUT_SECONDS * 1000,
    workDir: path.resolve(s.TOLLGATE_RUN_DIR ?? path.join(os.tmpdir(), 'tollgate-runs')),
    pollMs: s.TOLLGATE_RUN_POLL_MS,
    leaseMs: s.TOLLGATE_RUN_LEASE_MS,
    killGraceMs: s.TOLLGATE_RUN_KILL_GRACE_MS,
    searchPath: present.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    passEnv: Object.fromEntries(
      (s.TOLLGATE_RUN_ENV?.split(',') ?? []).flatMap((name) =>
        present[name] === undefined ? [] : [[name, present[name]]],
      ),
    ),
    sandbox: s.TOLLGATE_RUN_SANDBOX,
    image: s.TOLLGATE_RUN_IMAGE,
    dockerHost: s.TOLLGATE_RUN_DOCKER_HOST,
    sandboxUser: {
      uid: Number(s.TOLLGATE_RUN_SANDBOX_USER.split(':')[0]),
      gid: Number(s.TOLLGATE_RUN_SANDBOX_USER.split(':')[1]),
    },
    cgroup: s.TOLLGATE_RUN_CGROUP,
    bounds: {
      memoryBytes: s.TOLLGATE_RUN_MEMORY_MB * 1024 * 1024,
      processes: s.TOLLGATE_RUN_PROCESSES,
      cpus: s.TOLLGATE_RUN_CPUS,
      cpuSeconds: s.TOLLGATE_RUN_CPU_SECONDS,
      diskBytes: s.TOLLGATE_RUN_DISK_MB * 1024 * 1024,
    },
    produced: {
      logBytes: s.TOLLGATE_RUN_LOG_MB * 1024 * 1024,
      stateBytes: s.TOLLGATE_RUN_STATE_MB * 1024 * 1024,
      outputBytes: s.TOLLGATE_RUN_OUTPUT_KB * 1024,
      outputsBytes: s.TOLLGATE_RUN_OUTPUTS_KB * 1024,
    },
    egress: {
      hosts: s.TOLLGATE_RUN_EGRESS_HOSTS.split(',').map((entry) => ({
        host: entry.slice(0, entry.lastIndexOf(':')).toLowerCase(),
        port: Number(entry.slice(entry.lastIndexOf(':') + 1)),
      })),
      nodePorts: s.TOLLGATE_RUN_NODE_PORTS.split(',').map(Number),
    },
    providerMirror:
      s.TOLLGATE_RUN_PROVIDER_MIRROR === undefined ? undefined : path.resolve(s.TOLLGATE_RUN_PROVIDER_MIRROR),
    cliConfig: s.TOLLGATE_RUN_CLI_CONFIG === undefined ? undefined : path.resolve(s.TOLLGATE_RUN_CLI_CONFIG),
    mounts: (s.TOLLGATE_RUN_MOUNTS?.split(',') ?? []).map((entry) => {
      const [host, sandbox, mode] = entry.split(':') as [string, string, string | undefined];
      return { host: path.resolve(host), sandbox, writable: mode === 'rw' };
    }),
  };
}

/** Metrics and traces: OpenTelemetry's own variables decide whether traces are exported, and where. */
function observabilityConfig(s: Settings): Config['observability'] {
  return {
    metrics: s.TOLLGATE_METRICS === 'on',
    metricsPort: s.TOLLGATE_METRICS_PORT ?? null,
    metricsHost: s.TOLLGATE_METRICS_HOST ?? s.TOLLGATE_HOST,
    orgLabel: s.TOLLGATE_METRICS_ORG_LABEL === 'true',
    tracing:
      (s.OTEL_EXPORTER_OTLP_ENDPOINT || s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) &&
      s.OTEL_SDK_DISABLED === 'false' &&
      s.OTEL_TRACES_EXPORTER !== 'none'
        ? {
            url:
              s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${s.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, '')}/v1/traces`,
            serviceName: s.OTEL_SERVICE_NAME,
            sampler: s.OTEL_TRACES_SAMPLER,
            samplerRatio: s.OTEL_TRACES_SAMPLER_ARG,
          }
        : null,
  };
}
