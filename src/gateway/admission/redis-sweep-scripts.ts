import { BUDGETS_END, MOVE_VERSION } from './redis-lua.js';
import { gateScript } from './redis-script.js';

/**
 * The Redis gate's scripts for a heartbeat's work per organization and for a report
 * (`redis-sweeps.ts`).
 */

/**
 * The rest of a heartbeat, once per organization (its keys are in one slot): renews the holds and
 * slots of the replica's requests still running, and gives back expired holds (of a replica that
 * died; to their budgets' counts too), at most 1000 a call.
 *
 * Builds from the organization's prefix `conc:K` of the renewed slots, its `held`, `wallet`, `btag`
 * and budget counts. `REST`: the `holds` hold members, then key id / request id pairs. Returns
 * {expired holds given back, holds left}.
 */
export const SWEEP = gateScript({
  name: 'tollgateSweep',
  keys: ['holdExpiry'],
  args: ['orgPrefix', 'holdLeaseMs', 'slotLeaseMs', 'holds'],
  rest: true,
  clock: true,
  body: `${BUDGETS_END}
local org = ARG.orgPrefix
local holds = tonumber(ARG.holds)
for i = 1, holds do redis.call('ZADD', KEY.holdExpiry, 'XX', now + tonumber(ARG.holdLeaseMs), REST[i]) end
local i = 1 + holds
while i + 1 <= #REST do
  local slots = org .. 'conc:' .. REST[i]
  if redis.call('ZADD', slots, 'XX', 'CH', now + tonumber(ARG.slotLeaseMs), REST[i + 1]) == 1 then redis.call('PEXPIRE', slots, ARG.slotLeaseMs) end
  i = i + 2
end
local expired = redis.call('ZRANGEBYSCORE', KEY.holdExpiry, '-inf', now, 'LIMIT', 0, 1000)
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
  redis.call('ZREM', KEY.holdExpiry, member)
end
return {#expired, redis.call('ZCARD', KEY.holdExpiry)}
`,
});

/**
 * Reports again, to a Redis that lost them, a replica's holds and its charges not yet in
 * PostgreSQL, of one organization. A hold or a charge the gate did not have yet was counted by no
 * spendable amount or budget count rebuilt before it came: those it falls under are forgotten (the
 * next admission rebuilds them, with it). The wallet has its version moved, so a rebuild that raced
 * it is not kept.
 *
 * Builds from the organization's prefix its `held`, `unwritten`, `btag`, `wallet` and budget
 * counts. `REST`: (request, amount, budget tag) triples, the `holds` holds first, then unwritten
 * charges.
 */
export const REPORT = gateScript({
  name: 'tollgateReport',
  keys: ['holdExpiry'],
  args: ['orgPrefix', 'holdLeaseMs', 'holds', 'orgId'],
  rest: true,
  clock: true,
  body: `${MOVE_VERSION}
local org = ARG.orgPrefix
local holds = tonumber(ARG.holds)
local i = 1
local n = 0
while i + 2 <= #REST do
  local request, amount, tag = REST[i], REST[i + 1], REST[i + 2]
  local new
  if n < holds then
    new = redis.call('HSETNX', org .. 'held', request, amount) == 1
    redis.call('ZADD', KEY.holdExpiry, now + tonumber(ARG.holdLeaseMs), ARG.orgId .. '|' .. request)
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
      moveVersion(count)
    end
  end
  n = n + 1
  i = i + 3
end
return n
`,
});
