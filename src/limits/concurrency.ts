import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

type ScriptCall = (...args: string[]) => Promise<unknown>;

/** One held slot. `release` is idempotent: a slot is given back once, never twice. */
export interface Slot {
  release(): void;
}

/**
 * In-flight requests per key. `acquire` returns a slot, or null when the key
 * already holds `limit` of them.
 */
export interface ConcurrencyLimiter {
  acquire(key: string, limit: number): Promise<{ slot: Slot | null; inFlight: number }>;
}

/**
 * Slots as leases in a Redis sorted set per key, scored by expiry time (the
 * Redis server's clock, so replicas' clocks do not matter). A live request
 * renews its lease every third of the lease time; a gateway that dies stops
 * renewing, and its slots expire within `leaseMs`.
 *
 * @example
 * const limiter = createRedisConcurrency(redis, 'tollgate:conc:', 30_000);
 * const { slot } = await limiter.acquire('key_1', 10);
 * slot?.release();
 */
export function createRedisConcurrency(redis: Redis, prefix: string, leaseMs: number): ConcurrencyLimiter {
  // Defined once: ioredis then sends EVALSHA, not the whole script, on every request.
  const scripts = redis as Redis & { tollgateAcquireSlot?: ScriptCall; tollgateRenewSlot?: ScriptCall };
  if (!scripts.tollgateAcquireSlot) redis.defineCommand('tollgateAcquireSlot', { numberOfKeys: 1, lua: ACQUIRE });
  if (!scripts.tollgateRenewSlot) redis.defineCommand('tollgateRenewSlot', { numberOfKeys: 1, lua: RENEW });
  const acquireSlot = (...args: string[]) => scripts.tollgateAcquireSlot!(...args);
  const renewSlot = (...args: string[]) => scripts.tollgateRenewSlot!(...args);
  return {
    async acquire(key, limit) {
      const lease = randomUUID();
      const setKey = prefix + key;
      const [granted, inFlight] = (await acquireSlot(setKey, String(leaseMs), String(limit), lease)) as [number, number];
      if (granted !== 1) return { slot: null, inFlight };
      const renew = setInterval(() => {
        renewSlot(setKey, String(leaseMs), lease).catch(() => {});
      }, Math.floor(leaseMs / 3));
      renew.unref();
      let released = false;
      return {
        inFlight,
        slot: {
          release() {
            if (released) return;
            released = true;
            clearInterval(renew);
            // If this fails (Redis down), the lease expires by itself within leaseMs.
            redis.zrem(setKey, lease).catch(() => {});
          },
        },
      };
    },
  };
}

/** The embedded default: a count per key in this process. */
export function createMemoryConcurrency(): ConcurrencyLimiter {
  const inFlight = new Map<string, number>();
  return {
    async acquire(key, limit) {
      const held = inFlight.get(key) ?? 0;
      if (held >= limit) return { slot: null, inFlight: held };
      inFlight.set(key, held + 1);
      let released = false;
      return {
        inFlight: held + 1,
        slot: {
          release() {
            if (released) return;
            released = true;
            const now = (inFlight.get(key) ?? 1) - 1;
            if (now <= 0) inFlight.delete(key);
            else inFlight.set(key, now);
          },
        },
      };
    },
  };
}

// KEYS[1] = the key's lease set; ARGV = lease ms, limit, lease id. Returns {granted, in flight}.
const ACQUIRE = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[2]) then return {0, held} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {1, held + 1}
`;

// Pushes one lease's expiry forward, if it still exists.
const RENEW = `
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return 1
`;
