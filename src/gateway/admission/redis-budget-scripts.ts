import type { AdmitRequest } from './gate.js';

/** A script as `redis-scripts.ts`'s `GateScript` is (named here too, so the two files do not import each other). */
interface Script {
  name: string;
  numberOfKeys: number;
  lua: string;
}

/**
 * The Redis gate's budget counts (`budgets.ts`), in Lua: the parts the admit, release, heartbeat and report
 * scripts share (`redis-scripts.ts`), and the two scripts a count's rebuild uses. A count is the hash
 * `budget:<scope>:<id>:<window>`: `spent` (charges and holds, nano-units) once rebuilt, and `ver`, moved by what
 * changes a count not yet rebuilt (so a rebuild racing it is not kept). A request's tag is in `btag:O`
 * (request → tag), from its admission until its charge is written.
 */

/** Lua: `exceeds(a, b)`, a > b for decimal integers as strings (b not negative): exact, where a Lua number is not. */
export const EXCEEDS = `
local function exceeds(a, b)
  if string.sub(a, 1, 1) == '-' then return false end
  if #a ~= #b then return #a > #b end
  return a > b
end
`;

/**
 * Lua: `budgetsEnd(prefix, tag, held, cost)`: a request's end seen by the counts of its tag. Where its hold was
 * taken (`held`, a string amount, or false: none) it comes back; its cost (a string, or '') goes out of every
 * count; a count not yet rebuilt has its version moved instead.
 */
export const BUDGETS_END = `
local function budgetsEnd(prefix, tag, held, cost)
  for name in string.gmatch(tag, '%S+') do
    local isHeld = string.sub(name, 1, 1) ~= '~'
    if not isHeld then name = string.sub(name, 2) end
    local count = prefix .. name
    if redis.call('HEXISTS', count, 'spent') == 1 then
      if isHeld and held then redis.call('HINCRBY', count, 'spent', '-' .. held) end
      if cost ~= '' then redis.call('HINCRBY', count, 'spent', cost) end
    elseif redis.call('HINCRBY', count, 'ver', 1) == 1 then
      redis.call('PEXPIRE', count, 3600000)
    end
  end
end
`;

/**
 * Reads what a count's rebuild needs: its version, and the holds taken from it and the unwritten charges counted
 * in it, of one organization.
 *
 * KEYS: count, held, unwritten, btag. ARGV: the count's name. Returns {version, held pairs, unwritten pairs}.
 */
export const BUDGET_STATE: Script = {
  name: 'tollgateBudgetState',
  numberOfKeys: 4,
  lua: `
local holds, unwritten = {}, {}
local tags = redis.call('HGETALL', KEYS[4])
for i = 1, #tags, 2 do
  local tag = ' ' .. tags[i + 1] .. ' '
  local heldHere = string.find(tag, ' ' .. ARGV[1] .. ' ', 1, true)
  if heldHere or string.find(tag, ' ~' .. ARGV[1] .. ' ', 1, true) then
    local held = redis.call('HGET', KEYS[2], tags[i])
    if held and heldHere then table.insert(holds, tags[i]); table.insert(holds, held) end
    local charge = redis.call('HGET', KEYS[3], tags[i])
    if charge then table.insert(unwritten, tags[i]); table.insert(unwritten, charge) end
  end
end
return {redis.call('HGET', KEYS[1], 'ver') or '0', holds, unwritten}
`,
};

/**
 * Sets a rebuilt count: only one that has none, unchanged since its state was read. Returns 1 when set.
 *
 * KEYS: count. ARGV: spent, version, time to live ms.
 */
export const SET_BUDGET: Script = {
  name: 'tollgateSetBudget',
  numberOfKeys: 1,
  lua: `
if redis.call('HEXISTS', KEYS[1], 'spent') == 1 then return 0 end
if (redis.call('HGET', KEYS[1], 'ver') or '0') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'spent', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`,
};

/** The admit script's (budget count, limit or '' for none, limit's name) triples, in the request's tag's order. */
export function budgetArgs(request: AdmitRequest): string[] {
  const args: string[] = [];
  for (const budget of request.budgets)
    args.push(budget.counter, budget.limitNanos === null ? '' : budget.limitNanos.toString(), budget.limitName);
  return args;
}
