import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChargeJournal } from '../../../src/gateway/billing/journal.js';
import { WalletService } from '../../../src/gateway/billing/wallet.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { KeyService, type AuthenticatedKey } from '../../../src/gateway/keys/service.js';
import { GateKeeper } from '../../../src/gateway/admission/gate-keeper.js';
import type { LimitGate } from '../../../src/gateway/admission/gate.js';
import { createMemoryGate } from '../../../src/gateway/admission/memory-gate.js';
import { createRedisGate } from '../../../src/gateway/admission/redis-gate.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import { chargeRecord } from '../../helpers/charges.js';
import { uniqueRedisPrefix } from '../../helpers/services.js';
import { gateKinds, gateRedis, type GateRedis } from '../../helpers/gate-redis.js';
import { until } from '../../helpers/wait.js';

/**
 * The admission gate keeps each organization's spendable amount: the ledger's
 * balance less charges not yet written less holds in flight. These tests
 * check that arithmetic against the ledger in a real store, on the memory
 * gate and on the Redis gate, and that a Redis which loses everything is
 * rebuilt without losing money or handing it out twice.
 */

const kinds = await gateKinds();
const GRACE_MS = 300;

describe.each(kinds)('admission gate (%s)', (kind) => {
  let store: Store;
  let redis: GateRedis | null = null;
  const prefix = uniqueRedisPrefix();
  let wallets: WalletService;
  let journal: ChargeJournal;
  let gateKeeper: GateKeeper;
  let gate: LimitGate;

  beforeAll(async () => {
    store = await openStore({ dataDir: 'memory://' });
    const options = { concurrencyLeaseMs: 30_000, holdLeaseMs: 60_000 };
    if (kind !== 'memory') redis = await gateRedis(kind, prefix);
    gate = redis
      ? createRedisGate(redis.redis, { prefix, rebuildGraceMs: GRACE_MS, ...options })
      : createMemoryGate(options);
    journal = await ChargeJournal.open(null);
    wallets = new WalletService(store.db, (orgId, amount) => self.credit(orgId, amount));
    const self = (gateKeeper = new GateKeeper(gate, wallets, journal, createLogger('silent'), {
      limitsEnabled: true,
      billingEnabled: true,
      renewEveryMs: 30_000,
      rebuildGraceMs: GRACE_MS,
      monthToDate: async () => 0,
      projectBudgets: async () => undefined,
      budgetSpend: async () => ({ spent: 0n, written: new Set() }),
    }));
    await gateKeeper.recover();
  });
  afterAll(async () => {
    await store?.close();
    await redis?.close();
  });

  async function tenant(credit: bigint): Promise<AuthenticatedKey> {
    const org = await new OrgService(store.db).create('gate test');
    await wallets.credit(org.id, 'topup', credit);
    const { key } = await new KeyService(store.db, 'sk-gw-').create({
      orgId: org.id,
      name: 'k',
      maxConcurrency: 100,
      requestsPerMinute: 1000,
    });
    return {
      id: key.id,
      orgId: org.id,
      userId: null,
      projectId: null,
      requestsPerMinute: 1000,
      maxConcurrency: 100,
      tokensPerMinute: null,
      monthlyTokens: null,
      storeRequestData: false,
      responseCache: false,
      band: 'default',
      orgShareWeight: 1,
      budgets: { monthly: null, daily: null },
    };
  }

  const charge = (id: string, caller: AuthenticatedKey, cost: bigint) =>
    chargeRecord(id, { orgId: caller.orgId, keyId: caller.id }, cost);

  const spendable = (orgId: string) => gate.spendable(orgId);

  it('takes a hold, turns it into the charge, and agrees with the ledger once the charge is written', async () => {
    const caller = await tenant(1_000n);
    const ticket = await gateKeeper.admit({ requestId: `r-${kind}-1`, caller, estimatedTokens: 10, holdNanos: 400n });
    expect((await gate.walletState(caller.orgId)).holds.map((h) => h.amount)).toEqual([400n]);
    expect(await spendable(caller.orgId)).toBe(600n);
    await journal.append(charge(`r-${kind}-1`, caller, 150n));
    await gateKeeper.release(ticket, { actualTokens: 5, cost: 150n });
    expect((await gate.walletState(caller.orgId)).holds).toEqual([]);
    expect(await spendable(caller.orgId)).toBe(850n);
    await wallets.chargeMany(journal.pending());
    await journal.markApplied(journal.pending().map((r) => r.id));
    expect(await wallets.balance(caller.orgId)).toBe(850n);
    expect(await spendable(caller.orgId)).toBe(850n);
  });

  it('forgets the unwritten charges of every organization in a batch once PostgreSQL holds them', async () => {
    const callers = [await tenant(1_000n), await tenant(1_000n)];
    const charges = callers.flatMap((caller, i) => [
      charge(`r-${kind}-w${i}a`, caller, 10n),
      charge(`r-${kind}-w${i}b`, caller, 20n),
    ]);
    for (const record of charges) {
      const caller = callers.find((c) => c.orgId === record.orgId)!;
      const ticket = await gateKeeper.admit({ requestId: record.id, caller, estimatedTokens: 1, holdNanos: 50n });
      await journal.append(record);
      await gateKeeper.release(ticket, { actualTokens: 2, cost: record.cost });
    }
    for (const caller of callers)
      expect((await gate.walletState(caller.orgId)).unwritten.map((c) => c.amount)).toEqual([10n, 20n]);
    await wallets.chargeMany(charges);
    await gateKeeper.written(charges);
    for (const caller of callers) {
      expect((await gate.walletState(caller.orgId)).unwritten).toEqual([]);
      expect(await spendable(caller.orgId)).toBe(970n);
    }
  });

  it('refuses with 402 once the spendable amount is used up, and a top-up makes it spendable at once', async () => {
    const caller = await tenant(100n);
    const first = await gateKeeper.admit({ requestId: `r-${kind}-2a`, caller, estimatedTokens: 1, holdNanos: 150n });
    await expect(
      gateKeeper.admit({ requestId: `r-${kind}-2b`, caller, estimatedTokens: 1, holdNanos: 1n }),
    ).rejects.toMatchObject({ code: 'insufficient_funds' });
    await wallets.credit(caller.orgId, 'topup', 100n);
    const second = await gateKeeper.admit({ requestId: `r-${kind}-2c`, caller, estimatedTokens: 1, holdNanos: 10n });
    await gateKeeper.release(first, { actualTokens: 0, cost: null });
    await gateKeeper.release(second, { actualTokens: 0, cost: null });
    expect(await spendable(caller.orgId)).toBe(200n);
  });

  it('takes requests per minute and concurrency first, once; gives them back when the second step refuses', async () => {
    const base = await tenant(100n);
    const caller = { ...base, requestsPerMinute: 2, maxConcurrency: 1, tokensPerMinute: 50 };
    // First step, then the second takes it over: one count, one slot, whatever the two steps.
    const pass = await gateKeeper.admitRate({ requestId: `r-${kind}-4a`, caller });
    await expect(gateKeeper.admitRate({ requestId: `r-${kind}-4b`, caller })).rejects.toMatchObject({
      code: 'concurrency_limit_exceeded',
    });
    const ticket = await gateKeeper.admit({
      requestId: `r-${kind}-4a`,
      caller,
      estimatedTokens: 1,
      holdNanos: 10n,
      rate: pass,
    });
    expect(ticket.headers['X-RateLimit-Remaining']).toBe('1');
    await gateKeeper.giveBackRate(pass); // taken over: nothing given back twice
    await gateKeeper.release(ticket, { actualTokens: 0, cost: null });
    // A second step refused (tokens per minute) gives the first back: its count and its slot.
    for (let i = 0; i < 3; i++) {
      const refused = await gateKeeper.admitRate({ requestId: `r-${kind}-4c${i}`, caller });
      await expect(
        gateKeeper.admit({
          requestId: `r-${kind}-4c${i}`,
          caller,
          estimatedTokens: 100,
          holdNanos: 1n,
          rate: refused,
        }),
      ).rejects.toMatchObject({ code: 'tokens_limit_exceeded' });
      await gateKeeper.giveBackRate(refused);
      await gateKeeper.giveBackRate(refused);
    }
    // Its slot free (one allowed) and its count the second of two: the three refusals took nothing.
    const last = await gateKeeper.admitRate({ requestId: `r-${kind}-4d`, caller });
    expect(last.requests?.used).toBe(2);
    await expect(gateKeeper.admitRate({ requestId: `r-${kind}-4e`, caller })).rejects.toMatchObject({
      code: 'rate_limit_exceeded',
    });
    await gateKeeper.giveBackRate(last);
    expect(await spendable(caller.orgId)).toBe(100n);
  });

  it.runIf(kind !== 'memory')(
    'rebuilds a wallet after Redis loses everything, without handing out money twice',
    async () => {
      const caller = await tenant(10_000n);
      // In flight when Redis is lost: one request holding 3,000; one finished with a charge of
      // 2,000 not yet written.
      const running = await gateKeeper.admit({
        requestId: 'r-redis-3a',
        caller,
        estimatedTokens: 1,
        holdNanos: 3_000n,
      });
      const finished = await gateKeeper.admit({
        requestId: 'r-redis-3b',
        caller,
        estimatedTokens: 1,
        holdNanos: 2_500n,
      });
      await journal.append(charge('r-redis-3b', caller, 2_000n));
      await gateKeeper.release(finished, { actualTokens: 1, cost: 2_000n });

      await redis!.loseEverything(); // Redis restarts empty
      // Admissions wait while replicas report (the rebuild grace); this replica's heartbeat reports
      // its hold and its unwritten charge.
      await expect(
        gateKeeper.admit({ requestId: 'r-redis-3c', caller, estimatedTokens: 1, holdNanos: 1n }),
      ).rejects.toMatchObject({ code: 'billing_unavailable' });
      await gateKeeper.heartbeat();
      const state = await gate.walletState(caller.orgId);
      expect(state.holds.map((h) => [h.requestId, h.amount])).toEqual([['r-redis-3a', 3_000n]]);
      expect(state.unwritten.map((c) => [c.requestId, c.amount])).toContainEqual(['r-redis-3b', 2_000n]);

      // 10,000 − 3,000 held − 2,000 charged = 5,000: once the grace is over, a request holding
      // 5,000 passes, and then nothing is left.
      const big = await until(
        'the rebuild grace is over',
        () =>
          gateKeeper
            .admit({ requestId: 'r-redis-3d', caller, estimatedTokens: 1, holdNanos: 5_000n })
            .catch((error: unknown) => {
              if ((error as { code?: string }).code === 'billing_unavailable') return null;
              throw error;
            }),
        { timeout: GRACE_MS + 2_000, interval: 20 },
      );
      await expect(
        gateKeeper.admit({ requestId: 'r-redis-3e', caller, estimatedTokens: 1, holdNanos: 1n }),
      ).rejects.toMatchObject({ code: 'insufficient_funds' });
      // The charge reaches the ledger; the running request ends costing 1,000; nothing is counted
      // twice.
      await wallets.chargeMany(journal.pending());
      await gateKeeper.written(journal.pending());
      await journal.markApplied(journal.pending().map((r) => r.id));
      await gateKeeper.release(running, { actualTokens: 1, cost: 1_000n });
      await gateKeeper.release(big, { actualTokens: 0, cost: null });
      await journal.append(charge('r-redis-3a', caller, 1_000n));
      await wallets.chargeMany(journal.pending());
      await journal.markApplied(journal.pending().map((r) => r.id));
      expect(await wallets.balance(caller.orgId)).toBe(7_000n);
      expect(await spendable(caller.orgId)).toBe(7_000n);
      const gateSays = await gate.walletState(caller.orgId);
      expect(gateSays.holds).toEqual([]);
    },
  );
});
