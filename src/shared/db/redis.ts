import { Redis } from 'ioredis';
import type { Logger } from '../http/log.js';

/** How often the connection is asked whether Redis still answers (a PING, with the command timeout). */
const HEARTBEAT_MS = 1_000;

/** Whether each client opened here is answering, as its heartbeat last saw. */
const answering = new WeakMap<Redis, () => boolean>();

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
 * @example
 * const redis = openRedis('redis://127.0.0.1:6379', log);
 * await redis.quit();
 */
export function openRedis(url: string, log: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    // Keep trying for ever, at most every 2 s: Redis coming back must not need a restart.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    lazyConnect: false,
    // Commands issued in one turn of the event loop (the admits and settles of concurrent requests,
    // the charge applier's writes) leave in one write instead of a syscall each; each still gets
    // its own reply.
    enableAutoPipelining: true,
  });
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

/** Whether Redis answers: connected, and its last PING answered in time (for a client not opened by `openRedis`: connected). */
export function redisAnswers(redis: Redis): boolean {
  return answering.get(redis)?.() ?? redis.status === 'ready';
}

/** Resolves once the client is ready (or throws after `timeoutMs`), so start-up fails loudly on a wrong REDIS_URL. */
export function redisReady(redis: Redis, timeoutMs = 5_000): Promise<void> {
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
