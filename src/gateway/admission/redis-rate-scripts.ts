import type { GateScript } from './redis-scripts.js';

/** Sets the Lua local `now`: the Redis server's clock, in milliseconds (as in `redis-scripts.ts`). */
const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * The first step of an admission (`LimitGate.admitRate`): a key's requests per minute and concurrency, checked
 * before either is taken, with the same keys and rules as `ADMIT`'s, which then takes only the token limits and
 * the hold.
 *
 * KEYS: rpm, conc. ARGV: rpm limit, concurrency limit, slot lease ms, request id, minute ms.
 * Returns {'admitted', used, reset ms, now} or `ADMIT`'s two rate refusals.
 */
export const ADMIT_RATE: GateScript = {
  name: 'tollgateAdmitRate',
  numberOfKeys: 2,
  lua: `${NOW}
local minute = tonumber(ARGV[5])
local used = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
local reset = redis.call('PTTL', KEYS[1])
if reset < 0 then reset = minute end
if used > tonumber(ARGV[1]) then return {'rate_limit_exceeded', used, reset} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local inFlight = redis.call('ZCARD', KEYS[2])
if inFlight >= tonumber(ARGV[2]) then return {'concurrency_limit_exceeded', inFlight, used, reset} end
redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], minute) end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return {'admitted', used, reset, now}
`,
};

/**
 * Gives back what `ADMIT_RATE` took, for a request refused before `ADMIT` took it over: its slot, and its count
 * if its minute has not ended (after it, the count would come out of the next minute's).
 *
 * KEYS: rpm, conc. ARGV: request id, the minute's end (Redis clock, ms).
 */
export const GIVE_BACK_RATE: GateScript = {
  name: 'tollgateGiveBackRate',
  numberOfKeys: 2,
  lua: `${NOW}
redis.call('ZREM', KEYS[2], ARGV[1])
if now < tonumber(ARGV[2]) and tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end
return 1
`,
};
