import type { AdmitRequest } from './gate.js';
import { gateScript, type ScriptValue } from './redis-script.js';

/**
 * The Redis gate's budget counts (`budgets.ts`), in Lua: the two scripts a count's rebuild uses
 * (the admit script's check is the rule of `billing/budget-rule.ts`). A count is the hash
 * `budget:<scope>:<id>:<window>`: `spent` (charges and holds, nano-units) once rebuilt, and `ver`,
 * moved by what changes a count not yet rebuilt (so a rebuild racing it is not kept). A request's
 * tag is in `btag:O` (request → tag), from its admission until its charge is written.
 */

/**
 * Reads what a count's rebuild needs: its version, and the holds taken from it and the unwritten
 * charges counted in it, of one organization.
 *
 * Returns {version, held pairs, unwritten pairs}.
 */
export const BUDGET_STATE = gateScript({
  name: 'tollgateBudgetState',
  keys: ['count', 'held', 'unwritten', 'btag'],
  args: ['counter'],
  body: `
local holds, unwritten = {}, {}
local tags = redis.call('HGETALL', KEY.btag)
for i = 1, #tags, 2 do
  local tag = ' ' .. tags[i + 1] .. ' '
  local heldHere = string.find(tag, ' ' .. ARG.counter .. ' ', 1, true)
  if heldHere or string.find(tag, ' ~' .. ARG.counter .. ' ', 1, true) then
    local held = redis.call('HGET', KEY.held, tags[i])
    if held and heldHere then table.insert(holds, tags[i]); table.insert(holds, held) end
    local charge = redis.call('HGET', KEY.unwritten, tags[i])
    if charge then table.insert(unwritten, tags[i]); table.insert(unwritten, charge) end
  end
end
return {redis.call('HGET', KEY.count, 'ver') or '0', holds, unwritten}
`,
});

/**
 * Sets a rebuilt count: only one that has none, unchanged since its state was read. Returns 1 when
 * set.
 */
export const SET_BUDGET = gateScript({
  name: 'tollgateSetBudget',
  keys: ['count'],
  args: ['spent', 'version', 'ttlMs'],
  body: `
if redis.call('HEXISTS', KEY.count, 'spent') == 1 then return 0 end
if (redis.call('HGET', KEY.count, 'ver') or '0') ~= ARG.version then return 0 end
redis.call('HSET', KEY.count, 'spent', ARG.spent)
redis.call('PEXPIRE', KEY.count, ARG.ttlMs)
return 1
`,
});

/**
 * The admit script's (budget count, limit or '' for none, limit's name) triples, in the request's
 * tag's order.
 */
export function budgetArgs(request: AdmitRequest): ScriptValue[] {
  const args: ScriptValue[] = [];
  for (const budget of request.budgets)
    args.push(budget.counter, budget.limitNanos === null ? '' : budget.limitNanos.toString(), budget.limitName);
  return args;
}
