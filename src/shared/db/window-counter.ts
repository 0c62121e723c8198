import type { RedisClient } from './redis.js';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  type RateLimiterRes,
} from 'rate-limiter-flexible';

/** A count in a fixed window, as a caller reports it. */
export interface WindowCount {
  count: number;
  /** Milliseconds until the window ends and the count starts again from zero. */
  resetMs: number;
}

/**
 * Counts events per key in fixed windows: in Redis when the gateway has one
 * (every replica counts together, exactly), in this process otherwise. The
 * counting is rate-limiter-flexible's (RateLimiterRedis on the gateway's
 * ioredis client, RateLimiterMemory embedded): a window starts with its first
 * event and ends `windowMs` later. The caller compares the count with its own
 * limit, so each window's limiter never refuses by itself.
 *
 * @example
 * const counter = createWindowCounter(redis, 'tollgate:');
 * const { count, resetMs } = await counter.hit('api:key_1', 3_600_000);
 */
export interface WindowCounter {
  /** Counts one event; the count includes it. */
  hit(key: string, windowMs: number): Promise<WindowCount>;
  /** The count so far in `key`'s window of `windowMs`, without counting. */
  peek(key: string, windowMs: number): Promise<WindowCount>;
}

/** Never reached: the limit is the caller's; the limiter only counts. */
const UNBOUNDED_POINTS = Number.MAX_SAFE_INTEGER;

export function createWindowCounter(redis: RedisClient | null, prefix: string): WindowCounter {
  // Keys are `<prefix>window:<key>`, as the hand-written counter before this one named them.
  const keyPrefix = `${prefix}window`;
  const limiters = new Map<number, RateLimiterAbstract>();
  const limiterFor = (windowMs: number): RateLimiterAbstract => {
    let limiter = limiters.get(windowMs);
    if (!limiter) {
      // rate-limiter-flexible counts whole seconds; every window of ours is whole seconds long.
      const duration = Math.max(1, Math.round(windowMs / 1000));
      limiter = redis
        ? new RateLimiterRedis({ storeClient: redis, keyPrefix, points: UNBOUNDED_POINTS, duration })
        : new RateLimiterMemory({ keyPrefix, points: UNBOUNDED_POINTS, duration });
      limiters.set(windowMs, limiter);
    }
    return limiter;
  };
  const countOf = (result: RateLimiterRes | null): WindowCount =>
    result ? { count: result.consumedPoints, resetMs: Math.max(0, result.msBeforeNext) } : { count: 0, resetMs: 0 };
  return {
    async hit(key, windowMs) {
      return countOf(await limiterFor(windowMs).consume(key, 1));
    },
    async peek(key, windowMs) {
      return countOf(await limiterFor(windowMs).get(key));
    },
  };
}
