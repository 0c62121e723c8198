import { BUDGETS_END, RATE } from './redis-lua.js';
import { gateScript } from './redis-script.js';
import { BUDGET_RULE_LUA } from '../billing/budget-rule.js';

/**
 * The Redis gate's scripts for an admission, a release and a heartbeat's epoch (`redis-gate.ts`); a
 * heartbeat's sweep and the report are in `redis-sweep-scripts.ts`, a wallet's and a budget's
 * rebuild in `redis-wallet-scripts.ts` and `redis-budget-scripts.ts`, the Lua they share in
 * `redis-lua.ts`. The keys' names are `gateKeys` in `redis-keys.ts`; the scripts also build some
 * themselves from the organization's key prefix (they touch counts they are not given), so a name
 * is changed in both places.
 */

/**
 * Admits a request: checks its key's four limits (or, after `ADMIT_RATE`, the two token limits),
 * its organization's wallet and its budgets, then takes from all of them together. Everything is
 * checked before anything is kept: a refused request takes nothing. Refuses with `rebuilding` while
 * this Redis has no epoch or is inside its rebuild grace (none by default: it admits at once, and
 * each wallet and budget count is rebuilt when an admission finds it missing). A budget's check is
 * the rule of `billing/budget-rule.ts` (`BUDGET_RULE_LUA`). A budget's limit is the one last set
 * (`blimit:…`, written by the change before it answered: `setBudgets`) while it is kept, else the
 * replica's; a window with neither is only tagged (`~`), not held on.
 *
 * Keys and arguments are named in the definition (`gateScript`); `REST` is the request's budgets,
 * (budget count, limit ('': none), limit's name) triples in the tag's order (`budgetArgs`). A hold
 * of '' is billing off; a limit of -1 none; `resumeAt` the grace's end (Redis clock ms, 0: none);
 * `rateTaken` '1' when the count and the slot were taken by `ADMIT_RATE`, and are neither checked
 * nor taken again. Returns {outcome, …}: `admissionFrom` in `redis-replies.ts` reads it; admitted,
 * the request's budget tag last.
 */
export const ADMIT = gateScript({
  name: 'tollgateAdmit',
  keys: ['rpm', 'conc', 'tpm', 'month', 'wallet', 'held', 'holdExpiry', 'btag'],
  args: [
    'limitsOn',
    'rpmLimit',
    'concLimit',
    'slotLeaseMs',
    'tpmLimit',
    'estimate',
    'monthlyLimit',
    'hold',
    'minusHold',
    'requestId',
    'holdLeaseMs',
    'holdMember',
    'resumeAt',
    'minuteMs',
    'monthTtlMs',
    'rateTaken',
    'orgPrefix',
  ],
  rest: true,
  clock: true,
  body: `${RATE}${BUDGET_RULE_LUA}
local billing = ARG.hold ~= ''
if billing then
  -- Inside the rebuild grace of the epoch this replica's heartbeat last saw (the epoch is not one of this
  -- organization's keys, so the replica passes when its grace ends).
  if now < tonumber(ARG.resumeAt) then return {'rebuilding', tonumber(ARG.resumeAt) - now} end
  local avail = redis.call('HGET', KEY.wallet, 'avail')
  if not avail then return {'wallet_unknown'} end
  if avail == '0' or string.sub(avail, 1, 1) == '-' then return {'insufficient_funds'} end
end
local minute = tonumber(ARG.minuteMs)
local rateTaken = ARG.rateTaken == '1'
local limits = ARG.limitsOn == '1'
local est = tonumber(ARG.estimate)
local tpmLimit, monthlyLimit = tonumber(ARG.tpmLimit), tonumber(ARG.monthlyLimit)
local rpmUsed, rpmReset, tpmUsed, tpmReset = 0, 0, -1, 0
if limits then
  if not rateTaken then
    local refusal
    refusal, rpmUsed, rpmReset = checkRate(KEY.rpm, KEY.conc, tonumber(ARG.rpmLimit), tonumber(ARG.concLimit), minute)
    if refusal then return refusal end
  end
  if tpmLimit >= 0 then
    tpmUsed, tpmReset = windowed(KEY.tpm, est, minute)
    if tpmUsed > tpmLimit then return {'tokens_limit_exceeded', tpmUsed, tpmReset, rpmUsed, rpmReset} end
  end
  if monthlyLimit >= 0 then
    local month = redis.call('GET', KEY.month)
    if not month then return {'month_unknown'} end
    if tonumber(month) + est > monthlyLimit then return {'monthly_quota_exceeded', tonumber(month), 0, rpmUsed, rpmReset} end
  end
end
local held, tag = {}, ''
if billing then
  for i = 1, #REST - 2, 3 do
    local counter, replicaLimit, limitName = REST[i], REST[i + 1], REST[i + 2]
    local limit = redis.call('GET', ARG.orgPrefix .. limitName) or replicaLimit
    if limit ~= '' and limit ~= 'none' then
      local refusal = budgetRefusal(ARG.orgPrefix .. counter, ARG.hold, ARG.minusHold, limit)
      if refusal then
        for j in pairs(held) do redis.call('HINCRBY', ARG.orgPrefix .. REST[j], 'spent', ARG.minusHold) end
        return {refusal[1], (i - 1) / 3, refusal[2], refusal[3]}
      end
      held[i] = true
    end
    tag = tag .. (tag == '' and '' or ' ') .. (held[i] and '' or '~') .. counter
  end
end
if limits then
  if not rateTaken then takeRate(KEY.rpm, KEY.conc, minute, tonumber(ARG.slotLeaseMs), ARG.requestId) end
  if tpmLimit >= 0 then addToWindow(KEY.tpm, est, minute) end
  if monthlyLimit >= 0 then
    redis.call('INCRBY', KEY.month, est)
    redis.call('PEXPIRE', KEY.month, ARG.monthTtlMs)
  end
end
if billing then
  redis.call('HINCRBY', KEY.wallet, 'avail', ARG.minusHold)
  redis.call('HINCRBY', KEY.wallet, 'ver', 1)
  redis.call('HSET', KEY.held, ARG.requestId, ARG.hold)
  redis.call('ZADD', KEY.holdExpiry, now + tonumber(ARG.holdLeaseMs), ARG.holdMember)
  if tag ~= '' then redis.call('HSET', KEY.btag, ARG.requestId, tag) end
end
return {'admitted', rpmUsed, rpmReset, tpmUsed, tpmReset, now, tag}
`,
});

/**
 * Ends a request: frees its slot, trues up its token counts, and turns its
 * hold into its charge. The hold comes back and the cost goes out; a hold
 * already gone (expired, or lost with a Redis restart) gives nothing back.
 *
 * The counts of the request's budget tag see it too (`BUDGETS_END`); the tag is kept while its
 * charge is unwritten.
 *
 * `tokensWindowEnd` is 0 with no tpm limit; `cost` '' when there is none; `budgetTag` the tag the
 * request was admitted with ('': none; used when the gate has none).
 */
export const RELEASE = gateScript({
  name: 'tollgateRelease',
  keys: ['conc', 'tpm', 'month', 'wallet', 'held', 'holdExpiry', 'unwritten', 'btag'],
  args: [
    'requestId',
    'tokenDelta',
    'tokensWindowEnd',
    'monthlyOn',
    'held',
    'cost',
    'minusCost',
    'holdMember',
    'orgPrefix',
    'budgetTag',
  ],
  clock: true,
  body: `${BUDGETS_END}
redis.call('ZREM', KEY.conc, ARG.requestId)
local delta = tonumber(ARG.tokenDelta)
if delta ~= 0 then
  local windowEnd = tonumber(ARG.tokensWindowEnd)
  if windowEnd > 0 and (delta > 0 or now < windowEnd) and redis.call('EXISTS', KEY.tpm) == 1 then redis.call('INCRBY', KEY.tpm, delta) end
  if ARG.monthlyOn == '1' and redis.call('EXISTS', KEY.month) == 1 then redis.call('INCRBY', KEY.month, delta) end
end
if ARG.held == '1' or ARG.cost ~= '' then
  local known = redis.call('HEXISTS', KEY.wallet, 'avail') == 1
  local held = redis.call('HGET', KEY.held, ARG.requestId)
  local tag = redis.call('HGET', KEY.btag, ARG.requestId)
  if not tag and ARG.budgetTag ~= '' and ARG.cost ~= '' then
    -- Its hold is gone (expired, or lost with a failover's last writes): its cost still goes to its budgets.
    tag = ARG.budgetTag
    redis.call('HSET', KEY.btag, ARG.requestId, tag)
  end
  if tag then
    budgetsEnd(ARG.orgPrefix, tag, held, ARG.cost)
    if ARG.cost == '' then redis.call('HDEL', KEY.btag, ARG.requestId) end
  end
  if held then
    redis.call('HDEL', KEY.held, ARG.requestId)
    redis.call('ZREM', KEY.holdExpiry, ARG.holdMember)
    if known then redis.call('HINCRBY', KEY.wallet, 'avail', held) end
  end
  if ARG.cost ~= '' then
    if known then redis.call('HINCRBY', KEY.wallet, 'avail', ARG.minusCost) end
    redis.call('HSET', KEY.unwritten, ARG.requestId, ARG.cost)
  end
  redis.call('HINCRBY', KEY.wallet, 'ver', 1)
end
return 1
`,
});

/**
 * The first part of a replica's heartbeat: starts a new epoch if this Redis has none (it lost its
 * state). The epoch is "<resume at ms>:<id>": each replica compares it with the one it saw last, to
 * learn that another replica began a new one, and passes its resume time to `ADMIT`. Returns {1
 * when this call started a new epoch, the epoch}.
 */
export const EPOCH = gateScript({
  name: 'tollgateEpoch',
  keys: ['epoch'],
  args: ['graceMs', 'epochId'],
  clock: true,
  body: `
local epoch = redis.call('GET', KEY.epoch)
if epoch then return {0, epoch} end
epoch = (now + tonumber(ARG.graceMs)) .. ':' .. ARG.epochId
redis.call('SET', KEY.epoch, epoch)
return {1, epoch}
`,
});
