import { VERSION_TTL_MS } from './budgets.js';

/**
 * The Lua the Redis gate's scripts share (`redis-scripts.ts`, `redis-rate-scripts.ts`,
 * `redis-sweep-scripts.ts`), each written once here and put in the scripts that use it. Times are
 * the Redis server's clock (`TIME`), so replicas' clocks do not matter. Money crosses as decimal
 * strings and is added by HINCRBY (64-bit integers), never as a Lua number.
 */

/** Sets the Lua local `now`: the Redis server's clock, in milliseconds. */
export const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * Lua: a fixed window's counts (requests or tokens per minute, starting at a key's first request):
 * `windowed(key, add, minute)`, the count with `add` more and the ms until the window resets (a
 * minute when it has not begun); `addToWindow(key, add, minute)`, the count taken, the window begun
 * if it had not.
 */
const WINDOWS = `
local function windowed(key, add, minute)
  local used = tonumber(redis.call('GET', key) or '0') + add
  local reset = redis.call('PTTL', key)
  if reset < 0 then reset = minute end
  return used, reset
end
local function addToWindow(key, add, minute)
  redis.call('INCRBY', key, add)
  if redis.call('PTTL', key) < 0 then redis.call('PEXPIRE', key, minute) end
end
`;

/**
 * Lua (with the windows): a key's requests per minute and concurrency, for `ADMIT_RATE` and
 * `ADMIT`. `checkRate(rpmKey, concKey, rpmLimit, concLimit, minute)` (after `now`) checks both,
 * taking nothing: it returns the refusal, or nil and the minute's count and reset.
 * `takeRate(rpmKey, concKey, minute, leaseMs, requestId)` takes the request's count and its
 * concurrency slot, once every check has passed.
 */
export const RATE = `${WINDOWS}
local function checkRate(rpmKey, concKey, rpmLimit, concLimit, minute)
  local used, reset = windowed(rpmKey, 1, minute)
  if used > rpmLimit then return {'rate_limit_exceeded', used, reset} end
  redis.call('ZREMRANGEBYSCORE', concKey, '-inf', now)
  local inFlight = redis.call('ZCARD', concKey)
  if inFlight >= concLimit then return {'concurrency_limit_exceeded', inFlight, used, reset} end
  return nil, used, reset
end
local function takeRate(rpmKey, concKey, minute, leaseMs, requestId)
  addToWindow(rpmKey, 1, minute)
  redis.call('ZADD', concKey, now + leaseMs, requestId)
  redis.call('PEXPIRE', concKey, leaseMs)
end
`;

/**
 * Lua: `moveVersion(count)`, a budget count not yet rebuilt changed under a rebuild that may be
 * reading it: its version moves, so that rebuild is not kept; a count that had no version lives
 * `VERSION_TTL_MS` for it.
 */
export const MOVE_VERSION = `
local function moveVersion(count)
  if redis.call('HINCRBY', count, 'ver', 1) == 1 and redis.call('PTTL', count) < 0 then
    redis.call('PEXPIRE', count, ${VERSION_TTL_MS})
  end
end
`;

/**
 * Lua: `budgetsEnd(prefix, tag, held, cost)`: a request's end seen by the counts of its tag. Where
 * its hold was taken (`held`, a string amount, or false: none) it comes back; its cost (a string,
 * or '') goes out of every count; a count not yet rebuilt has its version moved instead.
 */
export const BUDGETS_END = `${MOVE_VERSION}
local function budgetsEnd(prefix, tag, held, cost)
  for name in string.gmatch(tag, '%S+') do
    local isHeld = string.sub(name, 1, 1) ~= '~'
    if not isHeld then name = string.sub(name, 2) end
    local count = prefix .. name
    if redis.call('HEXISTS', count, 'spent') == 1 then
      if isHeld and held then redis.call('HINCRBY', count, 'spent', '-' .. held) end
      if cost ~= '' then redis.call('HINCRBY', count, 'spent', cost) end
    else
      moveVersion(count)
    end
  end
end
`;
