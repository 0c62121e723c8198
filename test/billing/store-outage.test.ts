import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmount } from '../../src/billing/money.js';
import { ledgerEntries, usageRecords, walletHolds, wallets } from '../../src/db/schema.js';
import { expectError } from '../helpers/envelope.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { createTestDatabase, postgresAdminUrl, postgresAvailable } from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const available = await postgresAvailable();

describe.runIf(available)('PostgreSQL unreachable (through a TCP proxy the test controls)', () => {
  let proxy: TcpProxy;
  let gateway: TestGateway;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const database = await createTestDatabase();
    drop = database.drop;
    proxy = await startTcpProxy(Number(new URL(postgresAdminUrl).port || 5432));
    const url = new URL(database.url);
    url.port = String(proxy.port);
    url.hostname = '127.0.0.1';
    // The test gateway's own store goes through the proxy: createTestDatabase made it, startTestGateway uses DATABASE_URL.
    gateway = await startTestGateway('pglite', { DATABASE_URL: url.toString(), TOLLGATE_SIM_ITL_MS: '20' });
  });
  afterAll(async () => {
    await proxy?.start().catch(() => {});
    await gateway?.close();
    await drop?.();
  });

  const chat = (secret: string, extra: Record<string, unknown> = {}) =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }], ...extra }),
    });

  it('answers 503 billing_unavailable with Retry-After while the database is down, quickly, and recovers', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    expect((await chat(tenant.secret)).status).toBe(200);
    await proxy.stop();
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const response = await chat(tenant.secret);
      expect(performance.now() - started).toBeLessThan(6_000);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      await expectError(response, 503, 'billing_unavailable', 'billing_error');
    }
    await proxy.start();
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      const response = await chat(tenant.secret);
      status = response.status;
      await response.arrayBuffer();
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(status).toBe(200);
    // Only the two served requests were charged, exactly.
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(2);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(parseAmount('1.00') - records.reduce((sum, r) => sum + r.cost, 0n));
    expect(wallet!.reserved).toBe(0n);
  });

  it('gives back the hold of a request whose hold the store took but never confirmed (503), at once', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    expect((await chat(tenant.secret)).status).toBe(200);
    // The first statement that names the organization after the admission read is the hold.
    proxy.swallowRepliesAfter(tenant.orgId);
    const started = performance.now();
    const response = await chat(tenant.secret);
    await expectError(response, 503, 'billing_unavailable', 'billing_error');
    expect(performance.now() - started).toBeLessThan(6_000);
    // The hold was committed, its confirmation lost: the request gives it back as it ends, not when it expires.
    const deadline = performance.now() + 3_000;
    let reserved = -1n;
    while (performance.now() < deadline) {
      const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
      reserved = wallet!.reserved;
      if (reserved === 0n) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(reserved).toBe(0n);
    const holds = await gateway.services.db.select().from(walletHolds).where(eq(walletHolds.orgId, tenant.orgId));
    expect(holds).toHaveLength(0);
  });

  it('answers a request whose charge the store took but never confirmed, and charges it exactly once', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    // The key's id is in the charge's statement only (not in the admission read or the hold).
    proxy.swallowRepliesAfter(tenant.keyId);
    const started = performance.now();
    const response = await chat(tenant.secret);
    expect(response.status).toBe(200);
    await response.json();
    expect(performance.now() - started).toBeLessThan(7_000);
    for (let i = 0; i < 40 && gateway.services.spool.size > 0; i++) {
      await gateway.services.spool.drain();
      if (gateway.services.spool.size > 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(1);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(parseAmount('1.00') - records[0]!.cost);
    expect(wallet!.reserved).toBe(0n);
    const ledger = await gateway.services.db.select().from(ledgerEntries).where(eq(ledgerEntries.orgId, tenant.orgId));
    expect(ledger.filter((entry) => entry.kind === 'charge')).toHaveLength(1);
  });

  it('bills a stream whose database went away while it was being served, once the database is back', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    const response = await chat(tenant.secret, { stream: true, max_tokens: 30, ignore_eos: true });
    expect(response.status).toBe(200);
    await proxy.stop();
    const text = await response.text();
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(gateway.services.spool.size).toBe(1);
    await proxy.start();
    for (let i = 0; i < 40 && gateway.services.spool.size > 0; i++) {
      await gateway.services.spool.drain();
      if (gateway.services.spool.size > 0) await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(gateway.services.spool.size).toBe(0);
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(1);
    expect(records[0]!.completionTokens).toBe(30);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(parseAmount('1.00') - records[0]!.cost);
    expect(wallet!.reserved).toBe(0n);
    const [ledger] = await gateway.services.db
      .select({ total: sql<string>`sum(${ledgerEntries.amount})::text` })
      .from(ledgerEntries)
      .where(eq(ledgerEntries.orgId, tenant.orgId));
    expect(BigInt(ledger!.total)).toBe(wallet!.balance);
  });
});
