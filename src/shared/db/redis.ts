import type { Cluster, Redis, RedisOptions } from 'ioredis';
import type { RedisTarget } from '../../config/types.js';
import type { Logger } from '../http/log.js';
import { lazily } from '../lazy-require.js';

const ioredis = lazily<typeof import('ioredis')>('ioredis');

/**
 * A connection to one Redis (perhaps found through Sentinel) or to a Redis Cluster: ioredis's own
 * clients.
 */
export type RedisClient = Redis | Cluster;

/** Whether a client is a Redis Cluster's (which has one connection per master). */
export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof ioredis().Cluster;
}

/** How often the connection is asked whether Redis still answers (a PING, with the command timeout). */
const HEARTBEAT_MS = 1_000;

/** Whether each client opened here is answering, as its heartbeat last saw. */
const answering = new WeakMap<RedisClient, () => boolean>();

/**
 * The Redis connection shared by limits (and later the response cache).
 * Commands fail at once while Redis is unreachable instead of queueing, so no
 * request waits on a Redis that is down; the client keeps reconnecting in the
 * background and work resumes without a restart. A Redis that keeps the
 * connection but answers nothing (hung, or a stalled network) raises no
 * connection error: a PING every second, with the command timeout, finds it,
 * so that outage too is logged once when it starts and once when it ends,
 * and `redisAnswers` (the `tollgate_dependency_up` gauge) says so.
 *
 * A Redis Cluster (`clusterNodes`) is reached through ioredis's `Cluster`, which sends each command
 * to the master of its key's slot and follows the cluster's changes; a Redis behind Sentinel
 * (`sentinels`) through its Sentinel connector, which asks the sentinels for the master and
 * reconnects to the new one after a failover (told at once by their `+switch-master`). A `url`
 * given with either gives only the credentials, TLS and database.
 *
 * @example
 * const redis = openRedis('redis://127.0.0.1:6379', log);
 * await redis.quit();
 */
export function openRedis(target: string | RedisTarget, log: Logger): RedisClient {
  const redis = connect(typeof target === 'string' ? { url: target, sentinelName: '' } : target);
  let down = false;
  const wentDown = (detail: string) => {
    if (down) return;
    down = true;
    log.error('redis unreachable: per-key limits answer 503 until it is back', { detail });
  };
  const cameBack = () => {
    if (down) log.warn('redis reachable again', {});
    down = false;
  };
  redis.on('error', (error: Error) => wentDown(error.message));
  // A Cluster's 'ready' comes once its slots are known.
  redis.on('ready', cameBack);
  let pinging = false;
  const heartbeat = setInterval(() => {
    // Not connected: the connection's own events tell.
    if (pinging || redis.status !== 'ready') return;
    pinging = true;
    redis
      .ping()
      .then(cameBack, (error: Error) => wentDown(error.message))
      .finally(() => (pinging = false));
  }, HEARTBEAT_MS);
  heartbeat.unref();
  redis.on('end', () => clearInterval(heartbeat));
  answering.set(redis, () => redis.status === 'ready' && !down);
  return redis;
}

/** The connection's options, common to the three kinds, and the client for `target`. */
function connect(target: RedisTarget): RedisClient {
  const common = {
    enableOfflineQueue: false,
    // Commands issued in one turn of the event loop (the admits and settles of concurrent requests,
    // the charge applier's writes) leave in one write instead of a syscall each; each still gets
    // its own reply. A Cluster makes one write per node.
    enableAutoPipelining: true,
  };
  const server: RedisOptions = {
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    ...credentialsOf(target.url),
  };
  // Keep trying for ever, at most every 2 s: Redis coming back must not need a restart.
  const retry = (attempt: number) => Math.min(attempt * 200, 2_000);
  if (target.clusterNodes) {
    return new (ioredis().Cluster)(target.clusterNodes, {
      ...common,
      clusterRetryStrategy: retry,
      redisOptions: server,
      lazyConnect: false,
    });
  }
  if (target.sentinels) {
    return new (ioredis().Redis)({
      ...common,
      ...server,
      sentinels: target.sentinels,
      name: target.sentinelName,
      sentinelPassword: target.sentinelPassword,
      failoverDetector: true,
      retryStrategy: retry,
      sentinelRetryStrategy: retry,
      lazyConnect: false,
    });
  }
  return new (ioredis().Redis)(target.url!, { ...common, ...server, retryStrategy: retry, lazyConnect: false });
}

/**
 * What a `redis://` or `rediss://` URL says besides its address, for a Cluster's or Sentinel's
 * connections.
 */
function credentialsOf(url: string | undefined): RedisOptions {
  if (!url) return {};
  const parsed = new URL(url);
  const database = Number(parsed.pathname.slice(1) || 0);
  return {
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    ...(database > 0 ? { db: database } : {}),
  };
}

/**
 * Whether Redis answers: connected, and its last PING answered in time (for a client not opened by
 * `openRedis`: connected).
 */
export function redisAnswers(redis: RedisClient): boolean {
  return answering.get(redis)?.() ?? redis.status === 'ready';
}

/**
 * Resolves once the client is ready (or throws after `timeoutMs`), so start-up fails loudly on a
 * wrong REDIS_URL.
 */
export function redisReady(redis: RedisClient, timeoutMs = 5_000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      reject(new Error(`Redis did not answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', onReady);
  });
}
