import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmount } from '../../../src/gateway/billing/money.js';
import { ledgerEntries, usageRecords, wallets } from '../../../src/shared/db/schema.js';
import { expectError } from '../../helpers/envelope.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { createTestDatabase, postgresAdminUrl, postgresAvailable } from '../../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';

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
    // The test gateway's own store goes through the proxy: createTestDatabase made it,
    // startTestGateway uses DATABASE_URL. Each test's writes move the catalog version, so the
    // catalog poll would drop, once, the cache a test warms before it cuts the database, and a
    // known key would turn unknown. These tests are about the journal, not the poll: its first read
    // comes after a minute, after the tests, instead of being waited out.
    gateway = await startTestGateway('pglite', {
      DATABASE_URL: url.toString(),
      TOLLGATE_SIM_ITL_MS: '20',
      TOLLGATE_CATALOG_POLL_MS: '60000',
    });
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

  it('serves keys it knows while the database is down and bills them once it is back; answers 503 for a key it has not seen', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    const stranger = await gateway.tenant({ credit: '1.00' });
    expect((await chat(tenant.secret)).status).toBe(200);
    await proxy.stop();
    // Known key, model and wallet: nothing on the request path needs the database; the charges wait
    // in the journal.
    for (let i = 0; i < 3; i++) {
      const response = await chat(tenant.secret);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    // A key this gateway has never seen cannot be checked: 503, quickly, with Retry-After.
    const started = performance.now();
    const response = await chat(stranger.secret);
    expect(performance.now() - started).toBeLessThan(6_000);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    await expectError(response, 503, 'billing_unavailable', 'billing_error');
    expect(gateway.services.journal.pendingCount).toBeGreaterThanOrEqual(3);
    await proxy.start();
    expect(await gateway.services.applier.settled(20_000)).toBe(true);
    // The four served requests were charged, exactly; the refused one nothing.
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(4);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(parseAmount('1.00') - records.reduce((sum, r) => sum + r.cost, 0n));
    expect(
      await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, stranger.orgId)),
    ).toHaveLength(0);
  });

  it('answers a request whose charge the store took but never confirmed, and charges it exactly once', async () => {
    const tenant = await gateway.tenant({ credit: '1.00' });
    // The key's id is in the charge's statement only (not in the key lookup, which is by hash).
    proxy.swallowRepliesAfter(tenant.keyId);
    const started = performance.now();
    const response = await chat(tenant.secret);
    expect(response.status).toBe(200);
    await response.json();
    expect(performance.now() - started).toBeLessThan(7_000);
    expect(await gateway.services.applier.settled(20_000)).toBe(true);
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(1);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(parseAmount('1.00') - records[0]!.cost);
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
    expect(gateway.services.journal.pendingCount).toBe(1);
    await proxy.start();
    expect(await gateway.services.applier.settled(20_000)).toBe(true);
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toHaveLength(1);
    expect(records[0]!.completionTokens).toBe(30);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(parseAmount('1.00') - records[0]!.cost);
    const [ledger] = await gateway.services.db
      .select({ total: sql<string>`sum(${ledgerEntries.amount})::text` })
      .from(ledgerEntries)
      .where(eq(ledgerEntries.orgId, tenant.orgId));
    expect(BigInt(ledger!.total)).toBe(wallet!.balance);
  });
});
