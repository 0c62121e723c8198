import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budgetLimitName, budgetCounter } from '../../../src/gateway/admission/budgets.js';
import type { LimitGate } from '../../../src/gateway/admission/gate.js';
import { createMemoryGate } from '../../../src/gateway/admission/memory-gate.js';
import { createRedisGate } from '../../../src/gateway/admission/redis-gate.js';
import { budgetRefusal, MAX_BUDGET_NANOS } from '../../../src/gateway/billing/budget-rule.js';
import { uniqueRedisPrefix } from '../../helpers/services.js';
import { gateKinds, gateRedis, type GateRedis } from '../../helpers/gate-redis.js';

/**
 * A budget's rule is written once in TypeScript (`budgetRefusal`, which the memory gate calls) and
 * once in Lua (`BUDGET_RULE_LUA`, in the Redis gate's admit script), both in
 * `billing/budget-rule.ts`: one table of cases runs through the function and through each gate,
 * which must agree on every case, and take the hold only when it fits.
 */

const TWO_53 = 2n ** 53n;
/** spent (null: the gate has no count), the request's hold, the budget's limit. */
const cases: Array<[bigint | null, bigint, bigint]> = [
  [null, 1n, 100n],
  [0n, 100n, 100n],
  [0n, 101n, 100n],
  [99n, 1n, 100n],
  [99n, 2n, 100n],
  [9n, 1n, 10n],
  [9n, 2n, 10n],
  [0n, 1n, 0n],
  [0n, 0n, 0n],
  [900n, 50n, 999n],
  [990n, 10n, 999n],
  // Past a Lua number's exact integers: only a comparison of the decimal strings is right.
  [TWO_53 + 1n, 1n, TWO_53 + 2n],
  [TWO_53 + 1n, 1n, TWO_53 + 1n],
  [MAX_BUDGET_NANOS - 1n, 1n, MAX_BUDGET_NANOS],
  [MAX_BUDGET_NANOS, 1n, MAX_BUDGET_NANOS],
  [0n, MAX_BUDGET_NANOS, MAX_BUDGET_NANOS],
];

const kinds = await gateKinds();

describe.each(kinds)("a budget's rule at the gate (%s)", (kind) => {
  let redis: GateRedis | null = null;
  let gate: LimitGate;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    const options = { concurrencyLeaseMs: 30_000, holdLeaseMs: 60_000 };
    if (kind !== 'memory') redis = await gateRedis(kind, prefix);
    gate = redis ? createRedisGate(redis.redis, { prefix, rebuildGraceMs: 0, ...options }) : createMemoryGate(options);
  });
  afterAll(async () => {
    await redis?.close();
  });

  it.each(cases)('spent %s, hold %s, limit %s: as budgetRefusal says', async (spent, hold, limit) => {
    const orgId = `org-${randomUUID()}`;
    const keyId = `key-${randomUUID()}`;
    const counter = budgetCounter('key', keyId, '2026-11');
    const wallet = await gate.walletState(orgId);
    expect(await gate.setWallet(orgId, 5n * MAX_BUDGET_NANOS, wallet.version)).toBe(true);
    if (spent !== null) {
      const state = await gate.budgetState(orgId, counter);
      expect(await gate.setBudgetSpent(orgId, counter, spent, state.version, 60_000)).toBe(true);
    }
    const admission = await gate.admit({
      requestId: randomUUID(),
      keyId,
      orgId,
      limits: null,
      estimatedTokens: 1,
      holdNanos: hold,
      month: '2026-11',
      rateTaken: false,
      budgets: [
        {
          counter,
          scope: 'key',
          subjectId: keyId,
          window: 'month',
          limitNanos: limit,
          limitName: budgetLimitName('key', keyId, 'month'),
          startsAt: 0,
          endsAt: Date.now() + 3_600_000,
        },
      ],
    });
    const rule = budgetRefusal(spent, hold, limit);
    if (rule === null) expect(admission.outcome).toBe('admitted');
    else expect(admission).toEqual({ ...rule, index: 0 });
    // A hold that fits is taken from the count; a refused one takes nothing.
    if (spent !== null) expect(await gate.budgetSpent(orgId, counter)).toBe(rule === null ? spent + hold : spent);
  });
});
