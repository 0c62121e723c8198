/**
 * A budget's rule, defined once here for the gate's two stores: the memory gate calls
 * `budgetRefusal`, and the Redis gate's admit script runs `BUDGET_RULE_LUA`, the same rule in Lua;
 * `test/gateway/admission/budget-rule.test.ts` runs one table of cases through both gates and this
 * function. What counts against a budget is its window's spend: the charges of the requests that
 * fell under it, plus the holds of those admitted and not yet ended. A request is admitted only if
 * its hold fits: spend + hold ≤ limit, in every budget it falls under that has a limit. A budget's
 * spend the gate does not have yet (not yet rebuilt from the usage records) admits nothing.
 */

/**
 * The largest budget: a billion units of the currency, so a count plus its holds stays far inside
 * Redis's 64 bits (the surfaces refuse a larger one).
 */
export const MAX_BUDGET_NANOS = 1_000_000_000n * 1_000_000_000n;

/** Why a hold does not fit in a budget; null: it fits. */
export type BudgetRefusal =
  { outcome: 'budget_unknown' } | { outcome: 'budget_exceeded'; spent: bigint; limit: bigint };

/**
 * The rule for one budget with a limit: `spent` is its spend so far (null: not known yet), `hold`
 * the request's.
 */
export function budgetRefusal(spent: bigint | null, hold: bigint, limit: bigint): BudgetRefusal | null {
  if (spent === null) return { outcome: 'budget_unknown' };
  if (spent + hold > limit) return { outcome: 'budget_exceeded', spent, limit };
  return null;
}

/**
 * The same rule in Lua: `budgetRefusal(count, hold, minusHold, limit)`, for the hash `count` (its
 * `spent` field), amounts as decimal strings. It takes the hold and gives it back if it does not
 * fit: only a sum read back from HINCRBY's 64-bit integers is exact, where a Lua number is not;
 * `exceeds` compares two such strings. Returns nil with the hold taken, or {'budget_unknown'} or
 * {'budget_exceeded', spent, limit} with nothing taken.
 */
export const BUDGET_RULE_LUA = `
local function exceeds(a, b)
  if string.sub(a, 1, 1) == '-' then return false end
  if #a ~= #b then return #a > #b end
  return a > b
end
local function budgetRefusal(count, hold, minusHold, limit)
  local spent = redis.call('HGET', count, 'spent')
  if not spent then return {'budget_unknown'} end
  redis.call('HINCRBY', count, 'spent', hold)
  if exceeds(redis.call('HGET', count, 'spent'), limit) then
    redis.call('HINCRBY', count, 'spent', minusHold)
    return {'budget_exceeded', spent, limit}
  end
  return nil
end
`;
