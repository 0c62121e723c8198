import proxyaddr from 'proxy-addr';
import { z } from 'zod';
import { hostPortList } from './host-ports.js';
import { storedSettings } from './stored-settings.js';

const booleanSetting = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

/**
 * Where a run may open HTTPS connections besides its cluster's nodes: the
 * OpenTofu and Terraform registries and the hosts their providers download from.
 */
const DEFAULT_EGRESS_HOSTS = [
  'registry.opentofu.org:443',
  'registry.terraform.io:443',
  'releases.hashicorp.com:443',
  'github.com:443',
  'objects.githubusercontent.com:443',
  'release-assets.githubusercontent.com:443',
];

/**
 * The environment the gateway reads, one entry per variable with its default
 * and its check (each documented in docs/settings.md). `loadConfig` turns the
 * parsed variables into `Config`.
 */
export const settingsSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  TOLLGATE_HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  REDIS_URL: z.string().url().optional(),
  TOLLGATE_DATA_DIR: z.string().min(1).default('.tollgate'),
  TOLLGATE_REPORTS_POOL_SIZE: z.coerce
    .number()
    .int()
    .min(1, 'TOLLGATE_REPORTS_POOL_SIZE must be 1 to 100 connections')
    .max(100, 'TOLLGATE_REPORTS_POOL_SIZE must be 1 to 100 connections')
    .default(4),
  TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100, 'TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS must be 100 to 3600000 milliseconds')
    .max(3_600_000, 'TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS must be 100 to 3600000 milliseconds')
    .default(30_000),
  TOLLGATE_ADMIN_TOKEN: z.string().min(16, 'TOLLGATE_ADMIN_TOKEN must be at least 16 characters').optional(),
  TOLLGATE_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]{2,16}$/, 'TOLLGATE_KEY_PREFIX must be 2-16 letters, digits, "-" or "_"')
    .default('sk-gw-'),
  TOLLGATE_KEYS_PER_ACCOUNT: z.coerce.number().int().min(1).max(10_000).default(5),
  TOLLGATE_ENGINES_FILE: z.string().min(1).default('engines/engines.json'),
  TOLLGATE_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(4 * 1024 * 1024),
  TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  TOLLGATE_MAX_JSON_DEPTH: z.coerce.number().int().min(8).max(256).default(64),
  TOLLGATE_OVERSIZE_DRAIN_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .default(64 * 1024 * 1024),
  TOLLGATE_OVERSIZE_DRAIN_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  TOLLGATE_UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  TOLLGATE_SEED_DEMO: booleanSetting.default(true),
  TOLLGATE_CURRENCY: z
    .string()
    .regex(/^[A-Z]{3}$/, 'TOLLGATE_CURRENCY must be an ISO 4217 code such as USD')
    .default('USD'),
  TOLLGATE_PUBLIC_URL: z.string().url().optional(),
  TOLLGATE_LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  TOLLGATE_REDIS_PREFIX: z.string().max(64).default('tollgate:'),
  TOLLGATE_REDIS_CLUSTER_NODES: hostPortList('TOLLGATE_REDIS_CLUSTER_NODES').optional(),
  TOLLGATE_REDIS_SENTINELS: hostPortList('TOLLGATE_REDIS_SENTINELS').optional(),
  TOLLGATE_REDIS_SENTINEL_NAME: z.string().min(1).max(200).default('mymaster'),
  TOLLGATE_REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
  TOLLGATE_LIMITS: z.enum(['on', 'off']).default('on'),
  TOLLGATE_BILLING: z.enum(['on', 'off']).default('on'),
  TOLLGATE_CONCURRENCY_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(30_000),
  TOLLGATE_COMPLETION_ESTIMATE: z.coerce.number().int().min(1).default(512),
  TOLLGATE_MAX_CHOICES: z.coerce.number().int().min(1).max(1024).default(128),
  TOLLGATE_TRANSLATION_MAX_NAME_CHARS: z.coerce.number().int().min(16).max(4096).default(256),
  TOLLGATE_TRANSLATION_MAX_ITEMS: z.coerce.number().int().min(1).max(1_000_000).default(20_000),
  TOLLGATE_TRANSLATION_MAX_TOOLS: z.coerce.number().int().min(1).max(100_000).default(1024),
  TOLLGATE_CACHE_TTL_SECONDS: z.coerce.number().int().min(1).default(3600),
  TOLLGATE_CACHE_MAX_ENTRY_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  TOLLGATE_CACHE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(64 * 1024 * 1024),
  TOLLGATE_REQUEST_DATA_RETENTION_DAYS: z.coerce.number().int().min(1).default(30),
  // Whole months of per-request usage records kept past the current one; 0 keeps them all.
  TOLLGATE_USAGE_DETAIL_RETENTION_MONTHS: z.coerce.number().int().min(0).max(1200).default(0),
  TOLLGATE_REQUEST_DATA_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  ...storedSettings,
  TOLLGATE_ENGINE_POLL_MS: z.coerce.number().int().min(100).default(2000),
  TOLLGATE_ENGINE_DNS_REFRESH_MS: z.coerce.number().int().min(100).max(3_600_000).default(5000),
  TOLLGATE_ENGINES_ON_SHUTDOWN: z.enum(['leave', 'stop']).default('leave'),
  TOLLGATE_FLOW_CONTROL: z.enum(['on', 'off']).default('on'),
  TOLLGATE_FLOW_QUEUE_PER_ORG: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  TOLLGATE_FLOW_QUEUE_TOTAL: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
  TOLLGATE_FLOW_PEERS: z.enum(['on', 'off']).default('on'),
  TOLLGATE_FLOW_BATCH_HEADROOM: z.coerce.number().int().min(0).max(10_000).default(1),
  TOLLGATE_FLOW_SHARE_HEADROOM: z.coerce.number().int().min(0).max(10_000).default(1),
  TOLLGATE_FLOW_BATCH_HEADROOM_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  TOLLGATE_FLOW_MAX_WAIT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  TOLLGATE_FLOW_INPUT_WEIGHT: z.coerce.number().min(0).max(1000).default(1),
  TOLLGATE_FLOW_OUTPUT_WEIGHT: z.coerce.number().min(0).max(1000).default(2),
  TOLLGATE_FLOW_POLL_MS: z.coerce.number().int().min(5).max(10_000).default(20),
  TOLLGATE_ROUTING_POLICY: z.enum(['scored', 'least-loaded', 'round-robin']).default('scored'),
  TOLLGATE_ROUTING_SCRAPE_MS: z.coerce.number().int().min(50).max(60_000).default(250),
  TOLLGATE_ROUTING_QUEUE_WEIGHT: z.coerce.number().min(0).default(1),
  TOLLGATE_ROUTING_KV_WEIGHT: z.coerce.number().min(0).default(1),
  TOLLGATE_ROUTING_PREFIX_WEIGHT: z.coerce.number().min(0).default(4),
  TOLLGATE_ROUTING_SESSION_WEIGHT: z.coerce.number().min(0).default(0.5),
  TOLLGATE_ROUTING_PREFIX_BLOCK_CHARS: z.coerce.number().int().min(8).max(4096).default(64),
  TOLLGATE_ROUTING_PREFIX_ENTRIES: z.coerce.number().int().min(100).default(50_000),
  TOLLGATE_ROUTING_PREFIX_TTL_MS: z.coerce.number().int().min(1000).default(600_000),
  TOLLGATE_ROUTING_AFFINITY_SLACK: z.coerce.number().int().min(0).max(1000).default(2),
  TOLLGATE_ROUTING_AFFINITY_SLACK_SHARE: z.coerce.number().min(0).max(100).default(0.5),
  TOLLGATE_ROUTING_PROBE_SLOTS: z.coerce.number().int().min(1).max(1000).default(2),
  TOLLGATE_SIM_TTFT_MS: z.coerce.number().int().min(0).default(0),
  TOLLGATE_SIM_ITL_MS: z.coerce.number().int().min(0).default(0),
  TOLLGATE_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(3_600_000).default(25_000),
  TOLLGATE_CORS_ORIGINS: z
    .string()
    .regex(
      /^(\*|none|https?:\/\/[^\s,/]+(,\s*https?:\/\/[^\s,/]+)*)$/,
      'TOLLGATE_CORS_ORIGINS must be *, none, or a comma-separated list of origins such as https://app.example.com',
    )
    .default('*'),
  TOLLGATE_DEPLOYMENT: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,31}$/, 'TOLLGATE_DEPLOYMENT must be 1-32 lower-case letters, digits or "-"')
    .optional(),
  TOLLGATE_HOLD_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
  TOLLGATE_STREAM_CHECKPOINT_TOKENS: z.coerce.number().int().min(1).max(1_000_000).default(100),
  TOLLGATE_STREAM_CHECKPOINT_MS: z.coerce.number().int().min(10).max(600_000).default(1_000),
  TOLLGATE_CATALOG_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(250),
  TOLLGATE_REBUILD_GRACE_MS: z.coerce.number().int().min(0).max(60_000).default(0),
  TOLLGATE_STACK_URL_ALLOW_HTTP: z.enum(['true', 'false']).default('false'),
  TOLLGATE_STACK_URL_ALLOW_PRIVATE: z.enum(['true', 'false']).default('false'),
  TOLLGATE_PORTAL_ORG_PAGES: z.coerce.number().int().min(1).max(1000).default(2),
  TOLLGATE_PORTAL_ORG_PAGES_WAITING: z.coerce.number().int().min(0).max(100_000).default(20),
  TOLLGATE_UPLOADS_IN_FLIGHT: z.coerce.number().int().min(1).max(1000).default(4),
  TOLLGATE_UPLOADS_IN_FLIGHT_PER_USER: z.coerce.number().int().min(1).max(1000).default(1),
  TOLLGATE_STACKS_PER_USER: z.coerce.number().int().min(1).max(1_000_000).default(100),
  TOLLGATE_STACKS_BYTES_PER_USER: z.coerce
    .number()
    .int()
    .min(1024)
    .default(100 * 1024 * 1024),
  TOLLGATE_TOFU_BIN: z.string().min(1).optional(),
  TOLLGATE_RUN_WORKERS: z.coerce.number().int().min(0).max(64).default(2),
  TOLLGATE_RUN_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(86_400).default(1800),
  TOLLGATE_RUN_DIR: z.string().min(1).optional(),
  TOLLGATE_RUN_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1000),
  TOLLGATE_RUN_LEASE_MS: z.coerce.number().int().min(1000).max(3_600_000).default(30_000),
  TOLLGATE_RUN_KILL_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  TOLLGATE_RUN_ENV: z
    .string()
    .regex(
      /^[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*$/,
      'TOLLGATE_RUN_ENV must be a comma-separated list of environment variable names',
    )
    .optional(),
  TOLLGATE_NODE_CREDENTIALS_KEY: z
    .string()
    .refine(
      (value) => Buffer.from(value, 'base64').length === 32,
      'TOLLGATE_NODE_CREDENTIALS_KEY must be 32 bytes in base64 (openssl rand -base64 32)',
    )
    .optional(),
  TOLLGATE_NODE_SSH_TIMEOUT_MS: z.coerce.number().int().min(500).max(120_000).default(10_000),
  TOLLGATE_RUN_SANDBOX: z.enum(['auto', 'docker', 'bubblewrap', 'none']).default('auto'),
  TOLLGATE_RUN_IMAGE: z.string().min(1).default('tollgate/runner:latest'),
  TOLLGATE_RUN_DOCKER_HOST: z
    .string()
    .regex(
      /^unix:\/\/\/\S+$/,
      "TOLLGATE_RUN_DOCKER_HOST must be a local socket such as unix:///var/run/docker.sock (a run's folder is bind-mounted: the engine must be on this machine)",
    )
    .default('unix:///var/run/docker.sock'),
  TOLLGATE_RUN_SANDBOX_USER: z
    .string()
    .regex(/^\d{1,10}:\d{1,10}$/, 'TOLLGATE_RUN_SANDBOX_USER must be uid:gid, e.g. 65534:65534')
    .default('65534:65534'),
  TOLLGATE_RUN_CGROUP: z
    .string()
    .regex(
      /^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/,
      'TOLLGATE_RUN_CGROUP must be a cgroup path such as tollgate-runs (no leading slash, no "..")',
    )
    .refine((value) => !value.split('/').includes('..'), 'TOLLGATE_RUN_CGROUP must not contain ".."')
    .default('tollgate-runs'),
  TOLLGATE_RUN_MEMORY_MB: z.coerce.number().int().min(64).max(1_048_576).default(2048),
  TOLLGATE_RUN_PROCESSES: z.coerce.number().int().min(16).max(1_000_000).default(512),
  TOLLGATE_RUN_CPUS: z.coerce.number().min(0.1).max(1024).default(1),
  TOLLGATE_RUN_CPU_SECONDS: z.coerce.number().int().min(1).max(1_000_000).default(900),
  TOLLGATE_RUN_DISK_MB: z.coerce.number().int().min(16).max(10_485_760).default(2048),
  TOLLGATE_RUN_LOG_MB: z.coerce.number().int().min(1).max(4096).default(16),
  TOLLGATE_RUN_STATE_MB: z.coerce.number().int().min(1).max(4096).default(32),
  TOLLGATE_RUN_OUTPUT_KB: z.coerce.number().int().min(1).max(1_048_576).default(64),
  TOLLGATE_RUN_OUTPUTS_KB: z.coerce.number().int().min(1).max(4_194_304).default(1024),
  TOLLGATE_RUN_EGRESS_HOSTS: z
    .string()
    .regex(
      /^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*$/,
      'TOLLGATE_RUN_EGRESS_HOSTS must be a comma-separated list of host:port',
    )
    .default(DEFAULT_EGRESS_HOSTS.join(',')),
  TOLLGATE_RUN_NODE_PORTS: z
    .string()
    .regex(/^\d{1,5}(,\d{1,5})*$/, 'TOLLGATE_RUN_NODE_PORTS must be a comma-separated list of ports')
    .default('22'),
  TOLLGATE_RUN_PROVIDER_MIRROR: z.string().min(1).optional(),
  TOLLGATE_RUN_CLI_CONFIG: z.string().min(1).optional(),
  TOLLGATE_RUN_MOUNTS: z
    .string()
    .regex(
      /^[^,:]+:\/[^,:]*(:(ro|rw))?(,[^,:]+:\/[^,:]*(:(ro|rw))?)*$/,
      'TOLLGATE_RUN_MOUNTS must be a comma-separated list of host-path:/sandbox-path[:ro|rw]',
    )
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
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
  TOLLGATE_TRUSTED_PROXIES: z
    .string()
    .trim()
    .default('')
    .refine((list) => {
      try {
        proxyaddr.compile(
          list
            .split(',')
            .map((entry) => entry.trim())
            .filter(Boolean),
        );
        return true;
      } catch {
        return false;
      }
    }, 'TOLLGATE_TRUSTED_PROXIES must be a comma-separated list of IP addresses, CIDR ranges (10.0.0.0/8), or loopback, linklocal, uniquelocal'),
});

/** The environment as `settingsSchema` parsed it. */
export type Settings = z.output<typeof settingsSchema>;
