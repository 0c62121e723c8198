import { Redis } from 'ioredis';
import type { Logger } from '../http/log.js';

/**
 * The Redis connection shared by limits (and later the response cache).
 * Commands fail at once while Redis is unreachable instead of queueing, so no
 * request waits on a Redis that is down; the client keeps reconnecting in the
 * background and work resumes without a restart.
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
  });
  let down = false;
  redis.on('error', (error: Error) => {
    if (down) return;
    down = true;
    log.error('redis unreachable: per-key limits answer 503 until it is back', { detail: error.message });
  });
  redis.on('ready', () => {
    if (down) log.warn('redis reachable again', {});
    down = false;
  });
  return redis;
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
