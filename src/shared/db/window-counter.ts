import type { Redis } from 'ioredis';

/** A count in a fixed window, as a caller reports it. */
export interface WindowCount {
  count: number;
  /** Milliseconds until the window ends and the count starts again from zero. */
  resetMs: number;
}

/**
 * Counts events per key in fixed windows: in Redis when the gateway has one
 * (every replica counts together, exactly), in this process otherwise.
 *
 * @example
 * const counter = createWindowCounter(redis, 'tollgate:');
 * const { count, resetMs } = await counter.hit('api:key_1', 3_600_000);
 */
export interface WindowCounter {
  /** Counts one event; the count includes it. */
  hit(key: string, windowMs: number): Promise<WindowCount>;
  /** The count so far, without counting. */
  peek(key: string): Promise<WindowCount>;
}

export function createWindowCounter(redis: Redis | null, prefix: string): WindowCounter {
  return redis ? redisCounter(redis, prefix) : memoryCounter();
}

// KEYS: the counter. ARGV: window ms. The window starts with its first event.
const HIT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {count, ttl}`;

function redisCounter(redis: Redis, prefix: string): WindowCounter {
  if (!('windowHit' in redis)) redis.defineCommand('windowHit', { numberOfKeys: 1, lua: HIT });
  const hit = (redis as unknown as { windowHit(key: string, windowMs: number): Promise<[number, number]> }).windowHit.bind(redis);
  return {
    async hit(key, windowMs) {
      const [count, ttl] = await hit(`${prefix}window:${key}`, windowMs);
      return { count, resetMs: ttl };
    },
    async peek(key) {
      const [count, ttl] = await redis
        .multi()
        .get(`${prefix}window:${key}`)
        .pttl(`${prefix}window:${key}`)
        .exec()
        .then((replies) => replies!.map(([, value]) => value) as [string | null, number]);
      return { count: Number(count ?? 0), resetMs: Math.max(0, ttl) };
    },
  };
}

function memoryCounter(): WindowCounter {
  const windows = new Map<string, { count: number; endsAt: number }>();
  let nextSweep = 0;
  const current = (key: string, now: number) => {
    const window = windows.get(key);
    return window && window.endsAt > now ? window : undefined;
  };
  return {
    async hit(key, windowMs) {
      const now = Date.now();
      if (now >= nextSweep) {
        // Ended windows are dropped now and then, so the map holds only live ones.
        for (const [k, w] of windows) if (w.endsAt <= now) windows.delete(k);
        nextSweep = now + 60_000;
      }
      const window = current(key, now) ?? { count: 0, endsAt: now + windowMs };
      window.count += 1;
      windows.set(key, window);
      return { count: window.count, resetMs: window.endsAt - now };
    },
    async peek(key) {
      const now = Date.now();
      const window = current(key, now);
      return window ? { count: window.count, resetMs: window.endsAt - now } : { count: 0, resetMs: 0 };
    },
  };
}
