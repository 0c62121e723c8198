import { Cluster, Redis } from 'ioredis';
import type { RedisClient } from '../../src/shared/db/redis.js';
import { redisTopologiesMissing, startRedisCluster } from './redis-topologies.js';
import { deleteRedisPrefix, redisAvailable, redisUrl } from './services.js';

/**
 * Where a gate test keeps its counts: in the process, in the shared Redis, or on a Redis Cluster of
 * its own.
 */
export type GateKind = 'memory' | 'redis' | 'redis-cluster';

/**
 * The kinds a gate test runs on here: the memory gate always; the shared Redis when it answers; a
 * private three-master Redis Cluster (issue 69) when redis-server and redis-cli can be run. Each
 * missing one is said (or fails the run under REQUIRE_SERVICES=1).
 */
export async function gateKinds(): Promise<GateKind[]> {
  const missing = redisTopologiesMissing();
  if (missing) console.warn(`skipping the Redis Cluster cases: ${missing}`);
  return [
    'memory',
    ...((await redisAvailable()) ? ['redis' as const] : []),
    ...(missing ? [] : ['redis-cluster' as const]),
  ];
}

export interface GateRedis {
  redis: RedisClient;
  /** Loses every key of the test, as a Redis restarting empty does. */
  loseEverything(): Promise<void>;
  close(): Promise<void>;
}

/** The connection for a `kind` other than memory, with the test's keys under `prefix`. */
export async function gateRedis(kind: Exclude<GateKind, 'memory'>, prefix: string): Promise<GateRedis> {
  if (kind === 'redis') {
    const redis = new Redis(redisUrl, { lazyConnect: false });
    return {
      redis,
      loseEverything: () => deleteRedisPrefix(prefix),
      close: async () => {
        redis.disconnect();
        await deleteRedisPrefix(prefix);
      },
    };
  }
  const cluster = await startRedisCluster();
  const redis = new Cluster(cluster.nodes, { enableAutoPipelining: true });
  return {
    redis,
    // The cluster is the test's own: each master is emptied.
    loseEverything: async () => {
      await Promise.all(redis.nodes('master').map((node) => node.flushall()));
    },
    close: async () => {
      redis.disconnect();
      await cluster.stop();
    },
  };
}
