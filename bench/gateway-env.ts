import path from 'node:path';
import { Redis } from 'ioredis';

/** The operator token the bench's gateways are started with. */
export const ADMIN_TOKEN = 'bench-operator-token-0123456789';

/**
 * What every Redis key of this bench run's gateways starts with (their `TOLLGATE_REDIS_PREFIX`,
 * before the gateway's name).
 */
const GATEWAY_KEY_PREFIX = `bench:${process.pid}:`;

/**
 * The parent's environment without any setting that would change the processes under test, plus
 * `overrides`.
 *
 * @example
 * const env = cleanEnv({ PORT: '8080' });
 */
export function cleanEnv(overrides: Record<string, string> = {}): NodeJS.ProcessEnv {
  const dropped = (name: string) =>
    /^(TOLLGATE|SIM|OTEL)_/.test(name) || ['PORT', 'DATABASE_URL', 'REDIS_URL'].includes(name);
  const kept = Object.entries(process.env).filter(([name]) => !dropped(name));
  return { ...Object.fromEntries(kept), ...overrides };
}

/** Where a bench gateway keeps its state and finds its engines. */
export interface GatewaySetup {
  port: number;
  /** Its own data folder is `dataDir/name`; its Redis keys are under a prefix of its own. */
  name: string;
  dataDir: string;
  enginesFile: string;
  databaseUrl?: string;
  redisUrl?: string;
}

/**
 * A bench gateway's environment: loopback only, no demo data, warnings only in its log, PostgreSQL
 * and Redis when the bench was given them (`BENCH_DATABASE_URL`, `BENCH_REDIS_URL`), and `extra` on
 * top.
 *
 * @example
 * const env = gatewayEnv({ port, name: 'gateway', dataDir, enginesFile }, { TOLLGATE_LIMITS: 'off' });
 */
export function gatewayEnv(setup: GatewaySetup, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return cleanEnv({
    PORT: String(setup.port),
    TOLLGATE_HOST: '127.0.0.1',
    TOLLGATE_DATA_DIR: path.join(setup.dataDir, setup.name),
    ...(setup.databaseUrl ? { DATABASE_URL: setup.databaseUrl } : {}),
    ...(setup.redisUrl
      ? { REDIS_URL: setup.redisUrl, TOLLGATE_REDIS_PREFIX: `${GATEWAY_KEY_PREFIX}${setup.name}:` }
      : {}),
    TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
    TOLLGATE_SEED_DEMO: 'false',
    TOLLGATE_LOG_LEVEL: 'warn',
    TOLLGATE_ENGINES_FILE: setup.enginesFile,
    ...extra,
  });
}

/**
 * Deletes this bench run's gateways' Redis keys (limits, wallets, holds), once they have stopped: a
 * run leaves nothing in the Redis it was given. Before, each run left a few hundred keys behind.
 *
 * @example
 * await forgetGatewayKeys(process.env.BENCH_REDIS_URL);
 */
export async function forgetGatewayKeys(redisUrl: string | undefined): Promise<void> {
  if (!redisUrl) return;
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    for await (const keys of redis.scanStream({ match: `${GATEWAY_KEY_PREFIX}*`, count: 1000 }) as AsyncIterable<
      string[]
    >)
      if (keys.length > 0) await redis.del(...keys);
  } finally {
    redis.disconnect();
  }
}
