import { createHash } from 'node:crypto';
import path from 'node:path';
import { settingsSchema, type Settings } from './settings.js';
import type { Config } from './types.js';
import { peopleConfig, runsConfig, stackDownloadsConfig, uploadsConfig } from './platform-config.js';

export type { BodyDrain, Config, LogLevel } from './types.js';
export type { FlowSettings, RoutingSettings } from './fleet-types.js';

/**
 * The same store means the same deployment: replicas sharing a database share their engines'
 * containers.
 */
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
    redis: redisTarget(s),
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
    stackDownloads: stackDownloadsConfig(s),
    nodeAccess: {
      credentialsKey:
        s.TOLLGATE_NODE_CREDENTIALS_KEY === undefined
          ? undefined
          : Buffer.from(s.TOLLGATE_NODE_CREDENTIALS_KEY, 'base64'),
      sshTimeoutMs: s.TOLLGATE_NODE_SSH_TIMEOUT_MS,
    },
    uploads: uploadsConfig(s),
    portalPages: { perOrg: s.TOLLGATE_PORTAL_ORG_PAGES, waitingPerOrg: s.TOLLGATE_PORTAL_ORG_PAGES_WAITING },
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

/** What the gateway keeps for its clients: stored Responses, conversations and files. */
function storedConfig(s: Settings): Pick<Config, 'responses' | 'conversations' | 'files' | 'batches'> {
  return {
    responses: responsesConfig(s),
    conversations: conversationsConfig(s),
    files: {
      maxBytes: s.TOLLGATE_FILES_MAX_BYTES,
      maxLines: s.TOLLGATE_FILES_MAX_LINES,
      orgMax: s.TOLLGATE_FILES_ORG_MAX,
      orgMaxBytes: s.TOLLGATE_FILES_ORG_MAX_BYTES,
    },
    batches: {
      orgMax: s.TOLLGATE_BATCHES_ORG_MAX,
      concurrency: s.TOLLGATE_BATCHES_CONCURRENCY,
      leaseMs: s.TOLLGATE_BATCHES_LEASE_MS,
      windowSeconds: s.TOLLGATE_BATCHES_WINDOW_SECONDS,
      validatingSeconds: s.TOLLGATE_BATCHES_VALIDATING_SECONDS,
    },
  };
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
    maxBackground: s.TOLLGATE_RESPONSES_MAX_BACKGROUND,
    backgroundMaxEvents: s.TOLLGATE_RESPONSES_BACKGROUND_MAX_EVENTS,
    backgroundLeaseMs: s.TOLLGATE_RESPONSES_BACKGROUND_LEASE_MS,
    maxReferences: s.TOLLGATE_RESPONSES_MAX_REFERENCES,
  };
}

/**
 * The environment's settings, validated (each problem named), with what is set in it (an empty
 * string is unset).
 */
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
  if (s.TOLLGATE_REDIS_CLUSTER_NODES && s.TOLLGATE_REDIS_SENTINELS)
    throw new ConfigError('Set TOLLGATE_REDIS_CLUSTER_NODES or TOLLGATE_REDIS_SENTINELS, not both.');
  if (s.DATABASE_URL && !s.TOLLGATE_ADMIN_TOKEN) {
    // Each process would make a token of its own: the operator API and the portal's form protection
    // would answer 401 from all but one.
    throw new ConfigError(
      'TOLLGATE_ADMIN_TOKEN is not set: with DATABASE_URL every gateway process must share one operator token. Set TOLLGATE_ADMIN_TOKEN to the same secret of at least 16 characters on each process (openssl rand -base64 32 makes one).',
    );
  }
  return { settings: s, present };
}

/**
 * The Redis the gateway uses (REDIS_URL, TOLLGATE_REDIS_CLUSTER_NODES or TOLLGATE_REDIS_SENTINELS);
 * none: undefined.
 */
function redisTarget(s: Settings): Config['redis'] {
  if (!s.REDIS_URL && !s.TOLLGATE_REDIS_CLUSTER_NODES && !s.TOLLGATE_REDIS_SENTINELS) return undefined;
  return {
    url: s.REDIS_URL,
    clusterNodes: s.TOLLGATE_REDIS_CLUSTER_NODES,
    sentinels: s.TOLLGATE_REDIS_SENTINELS,
    sentinelName: s.TOLLGATE_REDIS_SENTINEL_NAME,
    sentinelPassword: s.TOLLGATE_REDIS_SENTINEL_PASSWORD,
  };
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
    peers: s.TOLLGATE_FLOW_PEERS === 'on',
    batchHeadroom: s.TOLLGATE_FLOW_BATCH_HEADROOM,
    batchHeadroomMs: s.TOLLGATE_FLOW_BATCH_HEADROOM_MS,
    shareHeadroom: s.TOLLGATE_FLOW_SHARE_HEADROOM,
  };
}

/**
 * How Docker engines choose a replica, and how often they scrape replicas' metrics
 * (TOLLGATE_ROUTING_*).
 */
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
    affinitySlackShare: s.TOLLGATE_ROUTING_AFFINITY_SLACK_SHARE,
    probeSlots: s.TOLLGATE_ROUTING_PROBE_SLOTS,
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
