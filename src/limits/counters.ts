import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';

/**
 * A count per key over a fixed window (it starts with the key's first count
 * and lasts `durationSec`), on Redis or in memory. rate-limiter-flexible does
 * the atomic increment-with-expiry; the limit itself is compared by the
 * caller, per request, so a key's limit can change at any time without
 * rebuilding limiters.
 *
 * @example
 * const rpm = createWindowCounter({ redis, prefix: 'tollgate:rpm:', durationSec: 60 });
 * const { total } = await rpm.add('key_1', 1);
 */
export interface WindowCounter {
  /** Adds `points` and returns the window's total after it, and how long the window has left. */
  add(key: string, points: number): Promise<{ total: number; msBeforeNext: number; created: boolean }>;
  /** Takes `points` back off (a refund); never below what was added. */
  subtract(key: string, points: number): Promise<void>;
}

export interface WindowCounterOptions {
  /** null: an in-process counter (the embedded default). */
  redis: Redis | null;
  prefix: string;
  durationSec: number;
}

// The limiter never refuses by itself: every key's own limit is checked by the caller.
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

export function createWindowCounter({ redis, prefix, durationSec }: WindowCounterOptions): WindowCounter {
  const limiter: RateLimiterAbstract = redis
    ? new RateLimiterRedis({ storeClient: redis, keyPrefix: prefix, points: UNBOUNDED, duration: durationSec, rejectIfRedisNotReady: true } as ConstructorParameters<typeof RateLimiterRedis>[0])
    : new RateLimiterMemory({ keyPrefix: prefix, points: UNBOUNDED, duration: durationSec });
  return {
    async add(key, points) {
      const res = await limiter.consume(key, points).catch(rethrowStoreError);
      return { total: res.consumedPoints, msBeforeNext: res.msBeforeNext, created: res.isFirstInDuration };
    },
    async subtract(key, points) {
      if (points > 0) await limiter.reward(key, points).catch(rethrowStoreError);
    },
  };
}

/** rate-limiter-flexible rejects with an Error for store failures (and a result object for its own limit, which never applies here). */
function rethrowStoreError(error: unknown): never {
  throw error instanceof Error ? error : new Error('rate limiter refused unexpectedly');
}
