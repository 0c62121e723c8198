import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChargeJournal } from '../../../src/gateway/billing/journal.js';
import { WalletService } from '../../../src/gateway/billing/wallet.js';
import { budgetSpend } from '../../../src/gateway/billing/budget-spend.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { GatewayError } from '../../../src/shared/http/errors.js';
import { KeyService, type AuthenticatedKey } from '../../../src/gateway/keys/service.js';
import { GateKeeper } from '../../../src/gateway/admission/gate-keeper.js';
import type { Budgets } from '../../../src/gateway/admission/budgets.js';
import type { LimitGate } from '../../../src/gateway/admission/gate.js';
import { createMemoryGate } from '../../../src/gateway/admission/memory-gate.js';
import { createRedisGate } from '../../../src/gateway/admission/redis-gate.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import { ProjectService } from '../../../src/platform/orgs/projects.js';
import { chargeRecord } from '../../helpers/charges.js';
import { uniqueRedisPrefix } from '../../helpers/services.js';
import { gateKinds, gateRedis, type GateRedis } from '../../helpers/gate-redis.js';
import { until } from '../../helpers/wait.js';

/**
 * Budgets per key and per project, at the gate: a hold is admitted only if it fits in what is left
 * of every budget the request falls under, taken with the wallet's in one step; the end of a
 * request gives back the hold and takes the charge; a count the gate lacks is rebuilt from the
 * usage records plus the holds and unwritten charges tagged with it. On the memory gate and on the
 * Redis gate.
 */

const kinds = await gateKinds();

describe.each(kinds)('budgets at the gate (%s)', (kind) => {
  let store: Store;
  let redis: GateRedis | null = null;
  const prefix = uniqueRedisPrefix();
  let wallets: WalletService;
  let journal: ChargeJournal;
  let gateKeeper: GateKeeper;
  let gate: LimitGate;
  const projectBudgets = new Map<string, Budgets>();
  let n = 0;
  const id = () => `r-${kind}-${++n}`;

  beforeAll(async () => {
    store = await openStore({ dataDir: 'memory://' });
    const options = { concurrencyLeaseMs: 30_000, holdLeaseMs: 60_000 };
    if (kind !== 'memory') redis = await gateRedis(kind, prefix);
    gate = redis
      ? createRedisGate(redis.redis, { prefix, rebuildGraceMs: 100, ...options })
      : createMemoryGate(options);
    journal = await ChargeJournal.open(null);
    wallets = new WalletService(store.db, (orgId, amount) => self.credit(orgId, amount));
    const self = (gateKeeper = new GateKeeper(gate, wallets, journal, createLogger('silent'), {
      limitsEnabled: false,
      billingEnabled: true,
      renewEveryMs: 30_000,
      rebuildGraceMs: 100,
      monthToDate: async () => 0,
      projectBudgets: async (projectId) => projectBudgets.get(projectId),
      budgetSpend: (scope, subjectId, window, ids) => budgetSpend(store.db, scope, subjectId, window, ids),
    }));
    await gateKeeper.recover();
  });
  afterAll(async () => {
    await store?.close();
    await redis?.close();
  });

  async function tenant(budgets: Budgets = { monthly: null, daily: null }) {
    const org = await new OrgService(store.db).create('budget test');
    await wallets.credit(org.id, 'topup', 1_000_000n);
    const project = await new ProjectService(store.db).create({ orgId: org.id, createdBy: null, name: 'p' });
    const { key } = await new KeyService(store.db, 'sk-gw-').create({ orgId: org.id, name: 'k' });
    const caller: AuthenticatedKey = {
      id: key.id,
      orgId: org.id,
      userId: null,
      projectId: null,
      requestsPerMinute: 1000,
      maxConcurrency: 1000,
      tokensPerMinute: null,
      monthlyTokens: null,
      storeRequestData: false,
      responseCache: false,
      band: 'default',
      orgShareWeight: 1,
      budgets,
    };
    return { caller, projectId: project.id };
  }

  const admit = (caller: AuthenticatedKey, holdNanos: bigint, projectId: string | null = null, requestId = id()) =>
    gateKeeper.admit({ requestId, caller, estimatedTokens: 1, holdNanos, projectId });

  async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
    const error = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GatewayError);
    return error as GatewayError;
  }

  it("admits holds while they fit in a key's monthly budget, refuses the one that would pass it, and frees what a charge does not use", async () => {
    const { caller } = await tenant({ monthly: 1_000n, daily: null });
    const first = await admit(caller, 400n);
    await admit(caller, 400n);
    const refused = await refusal(admit(caller, 400n));
    expect(refused.code).toBe('budget_exceeded');
    expect(refused.status).toBe(429);
    const now = new Date();
    const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(refused.headers?.['X-Budget-Reset']).toBe(nextMonth);
    expect(refused.headers?.['X-Budget-Scope']).toBe('key');
    expect(refused.details).toContainEqual({ field: 'resets_at', message: nextMonth });
    expect(Number(refused.headers?.['Retry-After'])).toBeGreaterThan(0);
    // The first request costs 100 of its 400: 300 come back, and a third hold of 400 fits (100 +
    // 400 + 400).
    await journal.append(chargeRecord(first.requestId, { orgId: caller.orgId, keyId: caller.id }, 100n));
    await gateKeeper.release(first, { actualTokens: 1, cost: 100n });
    await admit(caller, 400n);
    expect(await refusal(admit(caller, 200n))).toMatchObject({ code: 'budget_exceeded' });
  });

  it("holds a project's daily budget for every key booked to it, and names the project and the day's end", async () => {
    const { caller, projectId } = await tenant();
    projectBudgets.set(projectId, { monthly: null, daily: 500n });
    const other = {
      ...caller,
      id: (await new KeyService(store.db, 'sk-gw-').create({ orgId: caller.orgId, name: 'k2' })).key.id,
    };
    await admit(caller, 300n, projectId);
    const refused = await refusal(admit(other, 300n, projectId));
    expect(refused.headers?.['X-Budget-Scope']).toBe('project');
    expect(refused.headers?.['X-Budget-Window']).toBe('day');
    const now = new Date();
    const tomorrow = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
    expect(refused.headers?.['X-Budget-Reset']).toBe(tomorrow);
    // Booked to no project, the same key is held only to its own budgets (none).
    await admit(other, 300n);
  });

  it('a budget set through the gate binds an admission that still carries the old one (another replica)', async () => {
    // Issue 68: a replica's request-path cache still holds the budgets as they were; the gate reads
    // them as set.
    const { caller, projectId } = await tenant({ monthly: 1_000_000n, daily: null });
    const month = `budget:key:${caller.id}:${new Date().toISOString().slice(0, 7)}`;
    const held = await admit(caller, 100n);
    await gate.setBudgets(caller.orgId, 'key', caller.id, { monthly: 150n, daily: null }, 60_000);
    const lowered = await refusal(admit(caller, 100n));
    expect(lowered.code).toBe('budget_exceeded');
    expect(lowered.details).toContainEqual({ field: 'budget_limit', message: '0.00000015' });
    expect(await gate.budgetSpent(caller.orgId, month)).toBe(100n);
    await admit(caller, 50n);
    // Set where the replica knows none: its windows are held on from the next admission, rebuilt
    // first.
    projectBudgets.set(projectId, { monthly: null, daily: null });
    await gate.setBudgets(caller.orgId, 'project', projectId, { monthly: null, daily: 120n }, 60_000);
    await admit(caller, 0n, projectId);
    const { caller: other } = await tenant();
    const sameProject = { ...other, orgId: caller.orgId };
    expect(await refusal(admit(sameProject, 121n, projectId))).toMatchObject({ code: 'budget_exceeded' });
    await admit(sameProject, 120n, projectId);
    // Removed: a limit the replica still knows no longer binds.
    await gate.setBudgets(caller.orgId, 'key', caller.id, { monthly: null, daily: null }, 60_000);
    await journal.append(chargeRecord(held.requestId, { orgId: caller.orgId, keyId: caller.id }, 100n));
    await gateKeeper.release(held, { actualTokens: 1, cost: 100n });
    await admit(caller, 10_000n);
    // The first request's charge took its hold's place; the last one is not held on the removed
    // budget.
    expect(await gate.budgetSpent(caller.orgId, month)).toBe(150n);
  });

  it('admits exactly what fits when 200 requests ask at once', async () => {
    const { caller, projectId } = await tenant({ monthly: 10_000n, daily: null });
    projectBudgets.set(projectId, { monthly: 5_000n, daily: null });
    const outcomes = await Promise.allSettled(Array.from({ length: 200 }, () => admit(caller, 100n, projectId)));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(50);
    expect(
      await gate.budgetSpent(caller.orgId, `budget:project:${projectId}:${new Date().toISOString().slice(0, 7)}`),
    ).toBe(5_000n);
  });

  it('rebuilds a budget set later from the usage records, the holds in flight and the charges not yet written', async () => {
    const { caller } = await tenant();
    const owner = { orgId: caller.orgId, keyId: caller.id };
    // Written before the budget: 250 in the usage records.
    const written = await admit(caller, 300n);
    const writtenCharge = chargeRecord(written.requestId, owner, 250n);
    await journal.append(writtenCharge);
    await gateKeeper.release(written, { actualTokens: 1, cost: 250n });
    await wallets.chargeMany([writtenCharge]);
    await gateKeeper.written([writtenCharge]);
    // Charged, not yet written: 200. In flight: a hold of 300.
    const unwritten = await admit(caller, 300n);
    await journal.append(chargeRecord(unwritten.requestId, owner, 200n));
    await gateKeeper.release(unwritten, { actualTokens: 1, cost: 200n });
    const running = await admit(caller, 300n);
    // The budget is set now: 250 written + 200 unwritten are spent, so 750 are left. The running
    // request was admitted before the budget: its hold was not taken from it, and its charge will
    // be.
    const budgeted = { ...caller, budgets: { monthly: 1_000n, daily: null } };
    await admit(budgeted, 550n);
    expect(await refusal(admit(budgeted, 1n))).toMatchObject({ code: 'budget_exceeded' });
    const month = new Date().toISOString().slice(0, 7);
    expect(await gate.budgetSpent(caller.orgId, `budget:key:${caller.id}:${month}`)).toBe(1_000n);
    await journal.append(chargeRecord(running.requestId, owner, 100n));
    await gateKeeper.release(running, { actualTokens: 1, cost: 100n });
    expect(await gate.budgetSpent(caller.orgId, `budget:key:${caller.id}:${month}`)).toBe(1_100n);
  });

  it.runIf(kind !== 'memory')(
    'rebuilds a budget after Redis loses everything from the holds and charges the replicas report again',
    async () => {
      const { caller } = await tenant({ monthly: 10_000n, daily: null });
      const owner = { orgId: caller.orgId, keyId: caller.id };
      // In flight when Redis is lost: a hold of 3,000; and a charge of 2,000 not yet written.
      await admit(caller, 3_000n);
      const finished = await admit(caller, 2_500n);
      await journal.append(chargeRecord(finished.requestId, owner, 2_000n));
      await gateKeeper.release(finished, { actualTokens: 1, cost: 2_000n });
      await redis!.loseEverything(); // Redis restarts empty
      await admit(caller, 1n).catch(() => {}); // refused: no epoch yet
      await gateKeeper.heartbeat(); // reports the hold and the charge again, with their budget tags
      // 10,000 − 3,000 held − 2,000 charged: once the grace is over, a hold of 5,000 fits, and then
      // nothing does.
      await until(
        'the rebuild grace is over',
        () =>
          admit(caller, 5_000n).catch((error: unknown) => {
            if ((error as { code?: string }).code === 'billing_unavailable') return null;
            throw error;
          }),
        { timeout: 3_000, interval: 20 },
      );
      expect(await refusal(admit(caller, 1n))).toMatchObject({ code: 'budget_exceeded' });
    },
  );
});
