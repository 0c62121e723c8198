import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { walletHolds, wallets } from '../../src/db/schema.js';
import { availableStores, startTestGateway, type TestGateway } from '../helpers/gateway.js';

const stores = await availableStores();
const LEASE_MS = 1_000;

describe.each(stores)('wallet holds are leases (%s)', (store) => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_HOLD_LEASE_MS: String(LEASE_MS), TOLLGATE_SIM_ITL_MS: '20' });
  });
  afterAll(() => gateway?.close());

  const reservedOf = async (orgId: string) => (await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, orgId)))[0]!.reserved;

  it('keeps the hold of a request that runs for several leases, and gives it back when it ends', async () => {
    const tenant = await gateway.tenant();
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.secret}`, 'content-type': 'application/json' },
      // 150 tokens at 20 ms: about 3 s, three leases.
      body: JSON.stringify({ model: 'sim-chat', stream: true, max_tokens: 150, ignore_eos: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const started = performance.now();
    let seenDuring = 0n;
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
      if (performance.now() - started > 2.5 * LEASE_MS && seenDuring === 0n) seenDuring = await reservedOf(tenant.orgId);
    }
    expect(performance.now() - started).toBeGreaterThan(2.5 * LEASE_MS);
    expect(seenDuring).toBeGreaterThan(0n);
    expect(await reservedOf(tenant.orgId)).toBe(0n);
  });

  it('gives back a hold nobody renews (its gateway died) within two leases', async () => {
    const tenant = await gateway.tenant();
    expect(await gateway.services.wallets.hold(tenant.orgId, 'req_of_a_dead_gateway', 1_000_000n, LEASE_MS)).toBe(true);
    expect(await reservedOf(tenant.orgId)).toBe(1_000_000n);
    const started = performance.now();
    while ((await reservedOf(tenant.orgId)) !== 0n && performance.now() - started < 5 * LEASE_MS) await new Promise((r) => setTimeout(r, 100));
    expect(await reservedOf(tenant.orgId)).toBe(0n);
    expect(performance.now() - started).toBeLessThan(2 * LEASE_MS + 1_000);
    expect(await gateway.services.db.select().from(walletHolds).where(eq(walletHolds.orgId, tenant.orgId))).toHaveLength(0);
  });
});
