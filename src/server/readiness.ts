import { sql } from 'drizzle-orm';
import type { RedisClient } from '../shared/db/redis.js';
import type { Database } from '../shared/db/client.js';
import { withinStoreTimeout } from '../shared/db/timeout.js';
import type { Fleet } from '../gateway/engines/fleet.js';
import type { InFlight } from '../shared/http/in-flight.js';

/**
 * A probe's own checks answer within this long, under Kubernetes' usual probe timeout of a few
 * seconds.
 */
const READINESS_CHECK_TIMEOUT_MS = 2_000;

export interface ReadinessSources {
  db: Database;
  /** null: no REDIS_URL, nothing to check. */
  redis: RedisClient | null;
  fleet: Fleet;
  inFlight: InFlight;
}

/** `/health/ready`'s answer. */
export interface Readiness {
  ready: boolean;
  body: {
    status: 'ready' | 'unavailable' | 'draining';
    checks: {
      database: 'up' | 'down';
      redis: 'up' | 'down' | 'not_configured';
      /** Each model the fleet serves: whether at least one replica is ready. */
      engines: Record<string, 'ready' | 'unavailable'>;
    };
  };
}

/**
 * Whether this gateway should get traffic: not while it drains, nor while
 * the database (PostgreSQL, or PGlite) or Redis (when configured) does not
 * answer, nor while some model has no ready replica. The database and Redis
 * are asked now (`select 1`, `PING`, each at most READINESS_CHECK_TIMEOUT_MS);
 * probes arriving together share one check.
 *
 * @example
 * const readiness = createReadiness({ db, redis, fleet, inFlight });
 * const { ready, body } = await readiness();
 */
export function createReadiness(sources: ReadinessSources): () => Promise<Readiness> {
  let running: Promise<Readiness> | null = null;
  return () =>
    (running ??= check(sources).finally(() => {
      running = null;
    }));
}

async function check({ db, redis, fleet, inFlight }: ReadinessSources): Promise<Readiness> {
  const [database, redisState] = await Promise.all([
    answers(() => db.execute(sql`select 1`)),
    redis ? answers(() => redis.ping()) : Promise.resolve('not_configured' as const),
  ]);
  const engines: Record<string, 'ready' | 'unavailable'> = {};
  for (const engine of fleet.status()) {
    // An engine that scales to zero serves its next request by starting a replica: ready without
    // one.
    const scalesToZero = engine.minReplicas === 0 && engine.maxReplicas > 0;
    engines[engine.model] = scalesToZero || engine.replicas.some((r) => r.state === 'ready') ? 'ready' : 'unavailable';
  }
  const up = database === 'up' && redisState !== 'down' && Object.values(engines).every((state) => state === 'ready');
  const status = inFlight.draining ? 'draining' : up ? 'ready' : 'unavailable';
  return { ready: status === 'ready', body: { status, checks: { database, redis: redisState, engines } } };
}

async function answers(probe: () => Promise<unknown>): Promise<'up' | 'down'> {
  try {
    await withinStoreTimeout(probe(), READINESS_CHECK_TIMEOUT_MS);
    return 'up';
  } catch {
    return 'down';
  }
}
