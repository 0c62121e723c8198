import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import proxyaddr from 'proxy-addr';
import { z } from 'zod';

/**
 * Every setting of the gateway, read from the environment once and validated.
 * Nothing else in `src/` reads `process.env`: the parsed object is passed in.
 *
 * @example
 * const config = loadConfig(process.env);
 * console.log(config.port); // 8080 unless PORT is set
 */
const booleanSetting = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const settingsSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  TOLLGATE_HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: z.string().url().optional(),
  REDIS_URL: z.string().url().optional(),
  TOLLGATE_DATA_DIR: z.string().min(1).default('.tollgate'),
  TOLLGATE_ADMIN_TOKEN: z.string().min(16, 'TOLLGATE_ADMIN_TOKEN must be at least 16 characters').optional(),
  TOLLGATE_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]{2,16}$/, 'TOLLGATE_KEY_PREFIX must be 2-16 letters, digits, "-" or "_"')
    .default('sk-gw-'),
  TOLLGATE_ENGINES_FILE: z.string().min(1).default('engines/engines.json'),
  TOLLGATE_MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(4 * 1024 * 1024),
  TOLLGATE_UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  TOLLGATE_SEED_DEMO: booleanSetting.default(true),
  TOLLGATE_CURRENCY: z.string().regex(/^[A-Z]{3}$/, 'TOLLGATE_CURRENCY must be an ISO 4217 code such as USD').default('USD'),
  TOLLGATE_PUBLIC_URL: z.string().url().optional(),
  TOLLGATE_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  TOLLGATE_REDIS_PREFIX: z.string().max(64).default('tollgate:'),
  TOLLGATE_LIMITS: z.enum(['on', 'off']).default('on'),
  TOLLGATE_BILLING: z.enum(['on', 'off']).default('on'),
  TOLLGATE_CONCURRENCY_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(30_000),
  TOLLGATE_COMPLETION_ESTIMATE: z.coerce.number().int().min(1).default(512),
  TOLLGATE_CACHE_TTL_SECONDS: z.coerce.number().int().min(1).default(3600),
  TOLLGATE_CACHE_MAX_ENTRY_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  TOLLGATE_CACHE_MAX_BYTES: z.coerce.number().int().min(1024).default(64 * 1024 * 1024),
  TOLLGATE_REQUEST_DATA_RETENTION_DAYS: z.coerce.number().int().min(1).default(30),
  TOLLGATE_REQUEST_DATA_MAX_BYTES: z.coerce.number().int().min(1024).default(1024 * 1024),
  TOLLGATE_ENGINE_POLL_MS: z.coerce.number().int().min(100).default(2000),
  TOLLGATE_ENGINES_ON_SHUTDOWN: z.enum(['leave', 'stop']).default('leave'),
  TOLLGATE_SIM_TTFT_MS: z.coerce.number().int().min(0).default(0),
  TOLLGATE_SIM_ITL_MS: z.coerce.number().int().min(0).default(0),
  TOLLGATE_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(25_000),
  TOLLGATE_CORS_ORIGINS: z
    .string()
    .regex(/^(\*|none|https?:\/\/[^\s,/]+(,\s*https?:\/\/[^\s,/]+)*)$/, 'TOLLGATE_CORS_ORIGINS must be *, none, or a comma-separated list of origins such as https://app.example.com')
    .default('*'),
  TOLLGATE_DEPLOYMENT: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'TOLLGATE_DEPLOYMENT must be 1-32 lower-case letters, digits or "-"')
    .optional(),
  TOLLGATE_HOLD_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
  TOLLGATE_CATALOG_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(250),
  TOLLGATE_REBUILD_GRACE_MS: z.coerce.number().int().min(0).max(60_000).default(3_000),
  TOLLGATE_STACK_URL_ALLOW_HTTP: z.enum(['true', 'false']).default('false'),
  TOLLGATE_STACK_URL_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
  TOLLGATE_TOFU_BIN: z.string().min(1).optional(),
  TOLLGATE_RUN_WORKERS: z.coerce.number().int().min(0).max(64).default(2),
  TOLLGATE_RUN_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(86_400).default(1800),
  TOLLGATE_RUN_DIR: z.string().min(1).optional(),
  TOLLGATE_RUN_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  TOLLGATE_RUN_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(30_000),
  TOLLGATE_RUN_KILL_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  TOLLGATE_RUN_ENV: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*$/, 'TOLLGATE_RUN_ENV must be a comma-separated list of environment variable names')
    .optional(),
  TOLLGATE_PASSWORD_COST: z.coerce.number().int().min(10).max(20).default(15),
  TOLLGATE_SESSION_IDLE_MINUTES: z.coerce.number().int().min(1).max(43_200).default(720),
  TOLLGATE_SESSION_MAX_HOURS: z.coerce.number().int().min(1).max(8_760).default(168),
  TOLLGATE_METRICS: z.enum(['on', 'off']).default('on'),
  TOLLGATE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  TOLLGATE_METRICS_HOST: z.string().min(1).optional(),
  TOLLGATE_METRICS_ORG_LABEL: z.enum(['true', 'false']).default('false'),
  OTEL_SDK_DISABLED: z.enum(['true', 'false']).default('false'),
  OTEL_TRACES_EXPORTER: z.string().default('otlp'),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  OTEL_SERVICE_NAME: z.string().min(1).default('tollgate'),
  OTEL_TRACES_SAMPLER: z
    .enum(['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'])
    .default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  TOLLGATE_TRUSTED_PROXIES: z
    .string()
    .trim()
    .default('')
    .refine(
      (list) => {
        try {
          proxyaddr.compile(list.split(',').map((entry) => entry.trim()).filter(Boolean));
          return true;
        } catch {
          return false;
        }
      },
      'TOLLGATE_TRUSTED_PROXIES must be a comma-separated list of IP addresses, CIDR ranges (10.0.0.0/8), or loopback, linklocal, uniquelocal',
    ),
});

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export interface Config {
  port: number;
  host: string;
  /** PostgreSQL connection string; when absent the gateway uses PGlite in `dataDir`. */
  databaseUrl?: string;
  redisUrl?: string;
  /** Folder for PGlite's files and the generated operator token. `memory://` keeps PGlite in memory. */
  dataDir: string;
  adminToken?: string;
  keyPrefix: string;
  enginesFile: string;
  maxBodyBytes: number;
  upstreamTimeoutMs: number;
  seedDemo: boolean;
  currency: string;
  /** The address printed in the first-start instructions; defaults to http://127.0.0.1:PORT. */
  publicUrl?: string;
  logLevel: LogLevel;
  simulator: { ttftMs: number; itlMs: number };
  engines: {
    /** How often Docker engines reconcile their containers and health-check replicas. */
    pollMs: number;
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
  /** false: no wallet holds, charges or usage records (benchmarks only: requests are served unbilled). */
  billingEnabled: boolean;
  /**
   * This deployment's name, on every container it runs, so that deployments sharing a Docker host leave each
   * other's alone. Default: `d` + 8 hex digits of a hash of the database URL (password left out) or the data folder.
   */
  deployment: string;
  /** Origins a browser may call /v1 from: '*' (any), [] (none), or a list. Never with credentials. */
  corsOrigins: '*' | string[];
  /** On SIGTERM, how long requests in flight may run on before they are cut (and billed for what they used). */
  shutdownGraceMs: number;
  /** A wallet hold expires this long after it was taken or last renewed; a dead process's holds are given back within two leases. */
  holdLeaseMs: number;
  /**
   * How often each replica reads the catalog version to drop its in-process cache of keys, models,
   * prices and projects (PostgreSQL only: an embedded store has no other writer). Bounds how long
   * a change made on another replica (a revoked key) takes to be seen.
   */
  catalogPollMs: number;
  /**
   * After Redis comes back empty (or on a Redis first used), admissions wait this long before wallets are
   * rebuilt, so every live replica's heartbeat (every second) reports its holds first. Keep it above one second.
   */
  rebuildGraceMs: number;
  /** Adding a stack by URL: whether http:// and private, loopback or link-local addresses are allowed (both off by default: server-side request forgery). */
  stackDownloads: { allowHttp: boolean; allowPrivate: boolean };
  /** Applying stacks to clusters (`src/runs/`). */
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
  };
  observability: {
    /** false: no request metrics are recorded and `/metrics` is not served (benchmarks: the cost of metrics). */
    metrics: boolean;
    /**
     * null: `/metrics` is served on the main port to the operator token. A port: served there, without a
     * token, on `metricsHost` (and not on the main port), for a Prometheus that cannot send a token.
     */
    metricsPort: number | null;
    metricsHost: string;
    /** Token and spend counters carry an `organization` label (one series per organization and model: keep it off with many tenants). */
    orgLabel: boolean;
    /**
     * Traces, on when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set, unless OTEL_SDK_DISABLED=true or
     * OTEL_TRACES_EXPORTER=none, sent to `url` (the traces endpoint, or the endpoint + `/v1/traces`). The OTLP
     * exporter reads the other standard OTEL_EXPORTER_OTLP_* variables (headers, timeout, compression) itself.
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

export function loadConfig(env: Record<string, string | undefined>): Config {
  // Empty strings count as unset, as they do for most tools reading the environment.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const parsed = settingsSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid settings:\n${lines.join('\n')}`);
  }
  const s = parsed.data;
  return Object.freeze({
    port: s.PORT,
    host: s.TOLLGATE_HOST,
    databaseUrl: s.DATABASE_URL,
    redisUrl: s.REDIS_URL,
    dataDir: s.TOLLGATE_DATA_DIR === 'memory://' ? s.TOLLGATE_DATA_DIR : path.resolve(s.TOLLGATE_DATA_DIR),
    adminToken: s.TOLLGATE_ADMIN_TOKEN,
    keyPrefix: s.TOLLGATE_KEY_PREFIX,
    enginesFile: path.resolve(s.TOLLGATE_ENGINES_FILE),
    maxBodyBytes: s.TOLLGATE_MAX_BODY_BYTES,
    upstreamTimeoutMs: s.TOLLGATE_UPSTREAM_TIMEOUT_MS,
    seedDemo: s.TOLLGATE_SEED_DEMO,
    currency: s.TOLLGATE_CURRENCY,
    publicUrl: s.TOLLGATE_PUBLIC_URL,
    logLevel: s.TOLLGATE_LOG_LEVEL,
    simulator: { ttftMs: s.TOLLGATE_SIM_TTFT_MS, itlMs: s.TOLLGATE_SIM_ITL_MS },
    engines: { pollMs: s.TOLLGATE_ENGINE_POLL_MS, onShutdown: s.TOLLGATE_ENGINES_ON_SHUTDOWN },
    cache: { ttlSeconds: s.TOLLGATE_CACHE_TTL_SECONDS, maxEntryBytes: s.TOLLGATE_CACHE_MAX_ENTRY_BYTES, maxBytes: s.TOLLGATE_CACHE_MAX_BYTES },
    requestData: { retentionDays: s.TOLLGATE_REQUEST_DATA_RETENTION_DAYS, maxBytes: s.TOLLGATE_REQUEST_DATA_MAX_BYTES },
    billingEnabled: s.TOLLGATE_BILLING === 'on',
    shutdownGraceMs: s.TOLLGATE_SHUTDOWN_GRACE_MS,
    deployment: s.TOLLGATE_DEPLOYMENT ?? defaultDeployment(s.DATABASE_URL, s.TOLLGATE_DATA_DIR),
    corsOrigins: s.TOLLGATE_CORS_ORIGINS === '*' ? '*' : s.TOLLGATE_CORS_ORIGINS === 'none' ? [] : s.TOLLGATE_CORS_ORIGINS.split(',').map((origin) => origin.trim()),
    holdLeaseMs: s.TOLLGATE_HOLD_LEASE_MS,
    catalogPollMs: s.TOLLGATE_CATALOG_POLL_MS,
    rebuildGraceMs: s.TOLLGATE_REBUILD_GRACE_MS,
    stackDownloads: { allowHttp: s.TOLLGATE_STACK_URL_ALLOW_HTTP === 'true', allowPrivate: s.TOLLGATE_STACK_URL_ALLOW_PRIVATE === 'true' },
    runs: {
      tofuBin: s.TOLLGATE_TOFU_BIN,
      workers: s.TOLLGATE_RUN_WORKERS,
      timeoutMs: s.TOLLGATE_RUN_TIMEOUT_SECONDS * 1000,
      workDir: path.resolve(s.TOLLGATE_RUN_DIR ?? path.join(os.tmpdir(), 'tollgate-runs')),
      pollMs: s.TOLLGATE_RUN_POLL_MS,
      leaseMs: s.TOLLGATE_RUN_LEASE_MS,
      killGraceMs: s.TOLLGATE_RUN_KILL_GRACE_MS,
      searchPath: present.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      passEnv: Object.fromEntries((s.TOLLGATE_RUN_ENV?.split(',') ?? []).flatMap((name) => (present[name] === undefined ? [] : [[name, present[name]!]]))),
    },
    observability: {
      metrics: s.TOLLGATE_METRICS === 'on',
      metricsPort: s.TOLLGATE_METRICS_PORT ?? null,
      metricsHost: s.TOLLGATE_METRICS_HOST ?? s.TOLLGATE_HOST,
      orgLabel: s.TOLLGATE_METRICS_ORG_LABEL === 'true',
      tracing:
        (s.OTEL_EXPORTER_OTLP_ENDPOINT || s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) && s.OTEL_SDK_DISABLED === 'false' && s.OTEL_TRACES_EXPORTER !== 'none'
          ? {
              url: s.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${s.OTEL_EXPORTER_OTLP_ENDPOINT!.replace(/\/+$/, '')}/v1/traces`,
              serviceName: s.OTEL_SERVICE_NAME,
              sampler: s.OTEL_TRACES_SAMPLER,
              samplerRatio: s.OTEL_TRACES_SAMPLER_ARG,
            }
          : null,
    },
    people: {
      passwordCost: s.TOLLGATE_PASSWORD_COST,
      sessionIdleMs: s.TOLLGATE_SESSION_IDLE_MINUTES * 60_000,
      sessionMaxMs: s.TOLLGATE_SESSION_MAX_HOURS * 3_600_000,
      trustedProxies: s.TOLLGATE_TRUSTED_PROXIES.split(',').map((entry) => entry.trim()).filter(Boolean),
    },
    limits: {
      enabled: s.TOLLGATE_LIMITS === 'on',
      redisPrefix: s.TOLLGATE_REDIS_PREFIX,
      concurrencyLeaseMs: s.TOLLGATE_CONCURRENCY_LEASE_MS,
      completionEstimate: s.TOLLGATE_COMPLETION_ESTIMATE,
    },
  });
}
