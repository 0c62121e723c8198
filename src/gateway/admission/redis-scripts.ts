import { BUDGETS_END, EXCEEDS } from './redis-budget-scripts.js';

/**
 * A Lua script of the Redis gate (`redis-gate.ts`), as ioredis defines it on
 * a connection (`defineCommand`): its first `numberOfKeys` arguments are
 * KEYS, the rest ARGV. A script runs atomically, so each operation that must
 * see and change several keys at once is one script, one round trip. The
 * keys' names are `gateKeys` in `redis-keys.ts`; the scripts also build some themselves from the
 * organization's key prefix (they touch counts they are not given), so a name is changed in both places.
 *
 * Times are the Redis server's clock (`TIME`), so replicas' clocks do not
 * matter. Money crosses as decimal strings and is added by HINCRBY (64-bit
 * integers), never as a Lua number.
 */
export interface GateScript {
  /** The command's name on the connection. */
  name: string;
  numberOfKeys: number;
  lua: string;
}

/** Sets the Lua local `now`: the Redis server's clock, in milliseconds. */
const NOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * Admits a request: checks its key's four limits (or, after `ADMIT_RATE`, the two token limits), its organization's
 * wallet and its budgets, then takes from all of them together. Everything is checked before anything is kept: a
 * refused request takes nothing. Refuses with `rebuilding` while this Redis has no epoch or is inside its rebuild
 * grace (none by default: it admits at once, and each wallet and budget count is rebuilt when an admission finds
 * it missing). A budget's check takes the hold and gives it back if it does not fit (only a sum read back is exact). A
 * budget's limit is the one last set (`blimit:…`, written by the change before it answered: `setBudgets`) while it is
 * kept, else the replica's; a window with neither is only tagged (`~`), not held on.
 *
 * KEYS (all the organization's, one slot): rpm, conc, tpm, month, wallet, held, hold-expiry, btag.
 * ARGV: limits on, rpm limit, concurrency limit, slot lease ms, tpm limit (-1: none), estimate, monthly limit (-1: none),
 * hold, minus hold ('': billing off), request id, hold lease ms, hold member, grace's end (Redis clock ms, 0: none),
 * minute ms, month ttl ms, rate taken ('1': the count and the slot were taken by `ADMIT_RATE`, and are neither
 * checked nor taken again), the organization's key prefix, then (budget count, limit ('': none), limit's name) triples, in the tag's order.
 * Returns {outcome, …}: `admissionFrom` in `redis-replies.ts` reads it; admitted, the request's budget tag last.
 */
export const ADMIT: GateScript = {
  name: 'tollgateAdmit',
  numberOfKeys: 8,
  lua: `${NOW}${EXCEEDS}
local billing = ARGV[8] ~= ''
if billing then
  -- Inside the rebuild grace of the epoch this replica's heartbeat last saw (the epoch is not one of this
  -- organization's keys, so the replica passes when its grace ends).
  if now < tonumber(ARGV[13]) then return {'rebuilding', tonumber(ARGV[13]) - now} end
  local avail = redis.call('HGET', KEYS[5], 'avail')
  if not avail then return {'wallet_unknown'} end
  if avail == '0' or string.sub(avail, 1, 1) == '-' then return {'insufficient_funds'} end
end
local minute = tonumber(ARGV[14])
local rateTaken = ARGV[16] == '1'
local limits = ARGV[1] == '1'
local est = tonumber(ARGV[6])
local rpmUsed, rpmReset, tpmUsed, tpmReset = 0, 0, -1, 0
if limits then
  if not rateTaken then
    rpmUsed = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
    rpmReset = redis.call('PTTL', KEYS[1])
    if rpmReset < 0 then rpmReset = minute end
    if rpmUsed > tonumber(ARGV[2]) then return {'rate_limit_exceeded', rpmUsed, rpmReset} end
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    local inFlight = redis.call('ZCARD', KEYS[2])
    if inFlight >= tonumber(ARGV[3]) then return {'concurrency_limit_exceeded', inFlight, rpmUsed, rpmReset} end
  end
  if tonumber(ARGV[5]) >= 0 then
    tpmUsed = tonumber(redis.call('GET', KEYS[3]) or '0') + est
    tpmReset = redis.call('PTTL', KEYS[3])
    if tpmReset < 0 then tpmReset = minute end
    if tpmUsed > tonumber(ARGV[5]) then return {'tokens_limit_exceeded', tpmUsed, tpmReset, rpmUsed, rpmReset} end
  end
  if tonumber(ARGV[7]) >= 0 then
    local month = redis.call('GET', KEYS[4])
    if not month then return {'month_unknown'} end
    if tonumber(month) + est > tonumber(ARGV[7]) then return {'monthly_quota_exceeded', tonumber(month), 0, rpmUsed, rpmReset} end
  end
end
local held, tag = {}, ''
if billing then
  for i = 18, #ARGV - 2, 3 do
    local limit = redis.call('GET', ARGV[17] .. ARGV[i + 2]) or ARGV[i + 1]
    if limit ~= '' and limit ~= 'none' then
      local count = ARGV[17] .. ARGV[i]
      local spent = redis.call('HGET', count, 'spent')
      local refusal = nil
      if not spent then refusal = {'budget_unknown', (i - 18) / 3}
      else
        redis.call('HINCRBY', count, 'spent', ARGV[8])
        if exceeds(redis.call('HGET', count, 'spent'), limit) then
          redis.call('HINCRBY', count, 'spent', ARGV[9])
          refusal = {'budget_exceeded', (i - 18) / 3, spent, limit}
        end
      end
      if refusal then
        for j in pairs(held) do redis.call('HINCRBY', ARGV[17] .. ARGV[j], 'spent', ARGV[9]) end
        return refusal
      end
      held[i] = true
    end
    tag = tag .. (tag == '' and '' or ' ') .. (held[i] and '' or '~') .. ARGV[i]
  end
end
if limits then
  if not rateTaken then
    redis.call('INCR', KEYS[1])
    if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], minute) end
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[10])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
  end
  if tonumber(ARGV[5]) >= 0 then
    redis.call('INCRBY', KEYS[3], est)
    if redis.call('PTTL', KEYS[3]) < 0 then redis.call('PEXPIRE', KEYS[3], minute) end
  end
  if tonumber(ARGV[7]) >= 0 then
    redis.call('INCRBY', KEYS[4], est)
    redis.call('PEXPIRE', KEYS[4], ARGV[15])
  end
end
if billing then
  redis.call('HINCRBY', KEYS[5], 'avail', ARGV[9])
  redis.call('HINCRBY', KEYS[5], 'ver', 1)
  redis.call('HSET', KEYS[6], ARGV[10], ARGV[8])
  redis.call('ZADD', KEYS[7], now + tonumber(ARGV[11]), ARGV[12])
  if tag ~= '' then redis.call('HSET', KEYS[8], ARGV[10], tag) end
end
return {'admitted', rpmUsed, rpmReset, tpmUsed, tpmReset, now, tag}
`,
};

/**
 * Ends a request: frees its slot, trues up its token counts, and turns its
 * hold into its charge. The hold comes back and the cost goes out; a hold
 * already gone (expired, or lost with a Redis restart) gives nothing back.
 *
 * The counts of the request's budget tag see it too (`BUDGETS_END`); the tag is kept while its charge is unwritten.
 *
 * KEYS (the organization's): conc, tpm, month, wallet, held, hold-expiry, unwritten, btag. ARGV: request id, token
 * delta, tpm window end (0: no tpm limit), monthly on, held, cost, minus cost ('': none), hold member, the
 * organization's key prefix, the budget tag it was admitted with ('': none; used when the gate has none).
 */
export const RELEASE: GateScript = {
  name: 'tollgateRelease',
  numberOfKeys: 8,
  lua: `${NOW}${BUDGETS_END}
redis.call('ZREM', KEYS[1], ARGV[1])
local delta = tonumber(ARGV[2])
if delta ~= 0 then
  local windowEnd = tonumber(ARGV[3])
  if windowEnd > 0 and (delta > 0 or now < windowEnd) and redis.call('EXISTS', KEYS[2]) == 1 then redis.call('INCRBY', KEYS[2], delta) end
  if ARGV[4] == '1' and redis.call('EXISTS', KEYS[3]) == 1 then redis.call('INCRBY', KEYS[3], delta) end
end
if ARGV[5] == '1' or ARGV[6] ~= '' then
  local known = redis.call('HEXISTS', KEYS[4], 'avail') == 1
  local held = redis.call('HGET', KEYS[5], ARGV[1])
  local tag = redis.call('HGET', KEYS[8], ARGV[1])
  if not tag and ARGV[10] ~= '' and ARGV[6] ~= '' then
    -- Its hold is gone (expired, or lost with a failover's last writes): its cost still goes to its budgets.
    tag = ARGV[10]
    redis.call('HSET', KEYS[8], ARGV[1], tag)
  end
  if tag then
    budgetsEnd(ARGV[9], tag, held, ARGV[6])
    if ARGV[6] == '' then redis.call('HDEL', KEYS[8], ARGV[1]) end
  end
  if held then
    redis.call('HDEL', KEYS[5], ARGV[1])
    redis.call('ZREM', KEYS[6], ARGV[8])
    if known then redis.call('HINCRBY', KEYS[4], 'avail', held) end
  end
  if ARGV[6] ~= '' then
    if known then redis.call('HINCRBY', KEYS[4], 'avail', ARGV[7]) end
    redis.call('HSET', KEYS[7], ARGV[1], ARGV[6])
  end
  redis.call('HINCRBY', KEYS[4], 'ver', 1)
end
return 1
`,
};

/**
 * The first part of a replica's heartbeat: starts a new epoch if this Redis has none (it lost its state). The
 * epoch is "<resume at ms>:<id>": each replica compares it with the one it saw last, to learn that another
 * replica began a new one, and passes its resume time to `ADMIT`.
 *
 * KEYS: epoch. ARGV: rebuild grace ms, the new epoch's id. Returns {1 when this call started a new epoch, the epoch}.
 */
export const EPOCH: GateScript = {
  name: 'tollgateEpoch',
  numberOfKeys: 1,
  lua: `${NOW}
local epoch = redis.call('GET', KEYS[1])
if epoch then return {0, epoch} end
epoch = (now + tonumber(ARGV[1])) .. ':' .. ARGV[2]
redis.call('SET', KEYS[1], epoch)
return {1, epoch}
`,
};

/**
 * The rest of a heartbeat, once per organization (its keys are in one slot): renews the holds and slots of the
 * replica's requests still running, and gives back expired holds (of a replica that died; to their budgets'
 * counts too), at most 1000 a call.
 *
 * KEYS: hold-expiry; and, built from the organization's prefix, `conc:K` of the renewed slots, its `held`,
 * `wallet`, `btag` and budget counts. ARGV: the organization's key prefix, hold lease ms, slot lease ms, number
 * of holds, hold members…, then key id / request id pairs. Returns {expired holds given back, holds left}.
 */
export const SWEEP: GateScript = {
  name: 'tollgateSweep',
  numberOfKeys: 1,
  lua: `${NOW}${BUDGETS_END}
local org = ARGV[1]
local holds = tonumber(ARGV[4])
for i = 1, holds do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[4 + i]) end
local i = 5 + holds
while i + 1 <= #ARGV do
  local slots = org .. 'conc:' .. ARGV[i]
  if redis.call('ZADD', slots, 'XX', 'CH', now + tonumber(ARGV[3]), ARGV[i + 1]) == 1 then redis.call('PEXPIRE', slots, ARGV[3]) end
  i = i + 2
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1000)
for _, member in ipairs(expired) do
  local request = string.sub(member, string.find(member, '|', 1, true) + 1)
  local held = redis.call('HGET', org .. 'held', request)
  if held then
    redis.call('HDEL', org .. 'held', request)
    local wallet = org .. 'wallet'
    if redis.call('HEXISTS', wallet, 'avail') == 1 then redis.call('HINCRBY', wallet, 'avail', held) end
    redis.call('HINCRBY', wallet, 'ver', 1)
    local tag = redis.call('HGET', org .. 'btag', request)
    if tag then
      budgetsEnd(org, tag, held, '')
      redis.call('HDEL', org .. 'btag', request)
    end
  end
  redis.call('ZREM', KEYS[1], member)
end
return {#expired, redis.call('ZCARD', KEYS[1])}
`,
};

/**
 * Reports again, to a Redis that lost them, a replica's holds and its charges not yet in PostgreSQL, of one
 * organization. A hold or a charge the gate did not have yet was counted by no spendable amount or budget count
 * rebuilt before it came: those it falls under are forgotten (the next admission rebuilds them, with it). The
 * wallet has its version moved, so a rebuild that raced it is not kept.
 *
 * KEYS: hold-expiry; and, built from the organization's prefix, its `held`, `unwritten`, `btag`, `wallet` and
 * budget counts. ARGV: the organization's key prefix, hold lease ms, number of holds, organization id, then
 * (request, amount, budget tag) triples: holds, then unwritten charges.
 */
export const REPORT: GateScript = {
  name: 'tollgateReport',
  numberOfKeys: 1,
  lua: `${NOW}
local org = ARGV[1]
local holds = tonumber(ARGV[3])
local i = 5
local n = 0
while i + 2 <= #ARGV do
  local request, amount, tag = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local new
  if n < holds then
    new = redis.call('HSETNX', org .. 'held', request, amount) == 1
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[4] .. '|' .. request)
  else
    new = redis.call('HSETNX', org .. 'unwritten', request, amount) == 1
  end
  local wallet = org .. 'wallet'
  if new then redis.call('HDEL', wallet, 'avail') end
  redis.call('HINCRBY', wallet, 'ver', 1)
  if tag ~= '' then
    redis.call('HSET', org .. 'btag', request, tag)
    for name in string.gmatch(tag, '[^~%s]+') do
      local count = org .. name
      if new then redis.call('HDEL', count, 'spent') end
      if redis.call('HINCRBY', count, 'ver', 1) == 1 and redis.call('PTTL', count) < 0 then
        redis.call('PEXPIRE', count, 3600000)
      end
    end
  end
  n = n + 1
  i = i + 3
end
return n
`,
};
