import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdFor } from '../../../src/gateway/billing/holds.js';

const holdNanosOf = (...args: Parameters<typeof holdFor>) => holdFor(...args).holdNanos;
import { parseAmount } from '../../../src/gateway/billing/money.js';
import { ledgerEntries, usageRecords, wallets } from '../../../src/shared/db/schema.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

const stores = await availableStores();

describe.each(stores)('wallet holds and the overdraft bound (%s)', (store) => {
  let gateway: TestGateway;

  beforeAll(async () => {
    // 20 tokens at 10 ms: each request stays in flight ~0.2 s, so 50 of them overlap.
    gateway = await startTestGateway(store, { TOLLGATE_SIM_ITL_MS: '10', TOLLGATE_HOLD_LEASE_MS: '1000' });
  });
  afterAll(() => gateway?.close());

  /**
   * The wallet row once this gateway's charges are written, with `reserved`: the holds of requests
   * in flight, as the gate keeps them.
   */
  const walletOf = async (orgId: string) => {
    await gateway.services.applier.settled(5_000);
    const [row] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, orgId));
    const state = await gateway.services.gateKeeper.gate.walletState(orgId);
    return { ...row!, reserved: state.holds.reduce((sum, hold) => sum + hold.amount, 0n), holds: state.holds };
  };
  const body = { model: 'sim-chat', max_tokens: 20, ignore_eos: true, messages: [{ role: 'user', content: 'spend' }] };
  const post = (secret: string, extra: Record<string, unknown> = {}) =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, ...extra }),
    });

  it('50 concurrent requests against a balance that covers 5 stay within one hold of zero', async () => {
    // One request's real cost, measured on a well-funded tenant.
    const probe = await gateway.tenant({ credit: '1.00' });
    expect((await post(probe.secret)).status).toBe(200);
    await gateway.services.applier.settled(5_000);
    const [sample] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, probe.orgId));
    const credit = sample!.cost * 5n;

    const tenant = await gateway.tenant({ credit: '0', key: { maxConcurrency: 100, requestsPerMinute: 1000 } });
    await gateway.services.wallets.credit(tenant.orgId, 'topup', credit);
    const responses = await Promise.all(Array.from({ length: 50 }, () => post(tenant.secret)));
    const statuses = responses.map((r) => r.status);
    await Promise.all(responses.map((r) => r.arrayBuffer()));
    expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0);

    // The stated bound: at most one request's hold below zero.
    const oneHold = holdNanosOf(
      { bodyBytes: Buffer.byteLength(JSON.stringify(body)), body, task: 'chat', contextLength: 8192 },
      { inputPerToken: 150n, outputPerToken: 600n },
    );
    const wallet = await walletOf(tenant.orgId);
    expect(wallet.balance).toBeGreaterThanOrEqual(-oneHold);
    expect(wallet.reserved).toBe(0n);
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(statuses.filter((s) => s === 200).length);
    expect(wallet.balance).toBe(credit - records.reduce((sum, r) => sum + r.cost, 0n));
    const [ledger] = await gateway.services.db
      .select({ total: sql<string>`sum(${ledgerEntries.amount})::text` })
      .from(ledgerEntries)
      .where(eq(ledgerEntries.orgId, tenant.orgId));
    expect(BigInt(ledger!.total)).toBe(wallet.balance);
  });

  it('refuses with 402 while in-flight holds use the whole balance, and serves again once they settle', async () => {
    const tenant = await gateway.tenant({ credit: '0' });
    // Less than one hold of a 4096-token completion (4096 × 600 nanos = 0.0024576): the first
    // request takes all there is.
    await gateway.services.wallets.credit(tenant.orgId, 'topup', parseAmount('0.002'));
    // A stream's headers come once it is admitted: its hold is taken by then.
    const first = await post(tenant.secret, { max_tokens: 4096, stream: true });
    expect(first.status).toBe(200);
    const second = await post(tenant.secret, { max_tokens: 2 });
    expect(second.status).toBe(402);
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe('insufficient_funds');
    await first.body!.cancel();
    await until(
      'the hold of the cancelled stream is given back',
      async () => (await walletOf(tenant.orgId)).reserved === 0n,
      { timeout: 3_000 },
    );
    expect((await post(tenant.secret, { max_tokens: 2 })).status).toBe(200);
  });

  it('gives holds back after engine errors, validation errors and limit refusals', async () => {
    const tenant = await gateway.tenant({ credit: '1.00', key: { requestsPerMinute: 3 } });
    expect((await post(tenant.secret, { sim_fail: '500' })).status).toBe(502);
    expect((await post(tenant.secret, { max_tokens: 1_000_000 })).status).toBe(400);
    expect((await post(tenant.secret)).status).toBe(200);
    expect((await post(tenant.secret)).status).toBe(429);
    const wallet = await walletOf(tenant.orgId);
    expect(wallet.reserved).toBe(0n);
    expect(wallet.holds).toEqual([]);
  });

  it('gives back the holds of requests whose gateway died, once they expire', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    const gate = gateway.services.gateKeeper.gate;
    // Another replica's request that never ends: admitted, then never released or renewed.
    await gate.report([{ orgId: tenant.orgId, requestId: 'req_orphan', amount: 5_000n }], []);
    expect((await walletOf(tenant.orgId)).reserved).toBe(5_000n);
    // Its lease runs out (TOLLGATE_HOLD_LEASE_MS, 1 s here); the next heartbeat of any replica
    // gives it back.
    const wallet = await until(
      'the orphaned hold is given back',
      async () => {
        await gateway.services.gateKeeper.heartbeat();
        const state = await walletOf(tenant.orgId);
        return state.reserved === 0n && state;
      },
      { interval: 100 },
    );
    expect(wallet.balance).toBe(parseAmount('1.00'));
  });
});
