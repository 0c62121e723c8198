import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportLedger } from '../../../src/gateway/billing/ledger-export.js';
import { verifyWallet } from '../../../src/gateway/billing/reconcile.js';
import {
  dropExpiredUsageDetail,
  ensureUsagePartitions,
  usagePartitions,
} from '../../../src/gateway/billing/usage-partitions.js';
import { UsageReports } from '../../../src/gateway/billing/usage-reports.js';
import { WalletService } from '../../../src/gateway/billing/wallet.js';
import { KeyService } from '../../../src/gateway/keys/service.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { chargeRecord } from '../../helpers/charges.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';
import { rowsOf } from '../../../src/shared/db/rows.js';

const stores = (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];

const JANUARY = (day: number, i: number) => new Date(Date.UTC(2026, 0, day, 12, 0, i));
const MAY = (day: number, i: number) => new Date(Date.UTC(2026, 4, day, 12, 0, i));
const HALF_YEAR = { from: new Date('2026-01-01T00:00:00Z'), to: new Date('2026-07-01T00:00:00Z') };

describe.each(stores)('usage records kept in months (%s)', (kind) => {
  let store: Store;
  let drop = async () => {};
  let orgId: string;
  let keyId: string;
  const count = async (where: ReturnType<typeof sql>) => {
    const result = await store.db.execute(sql`select count(*)::int as n from usage_records where ${where}`);
    return Number(rowsOf<{ n: number }>(result)[0]!.n);
  };

  beforeAll(async () => {
    if (kind === 'postgres') {
      const database = await createTestDatabase();
      store = await openStore({ databaseUrl: database.url, dataDir: 'unused' });
      drop = database.drop;
    } else {
      store = await openStore({ dataDir: 'memory://' });
    }
    orgId = (await new OrgService(store.db).create('months')).id;
    keyId = (await new KeyService(store.db, 'sk-gw-').create({ orgId, name: 'k' })).key.id;
    const wallets = new WalletService(store.db);
    await wallets.credit(orgId, 'topup', 1_000_000_000n);
    // January's and May's requests, charged as the request path charges them; January's before its
    // partition.
    const owner = { orgId, keyId };
    await wallets.chargeMany(
      Array.from({ length: 20 }, (_, i) =>
        chargeRecord(`jan-${i}`, owner, BigInt(1000 + i), {
          createdAt: JANUARY(1 + (i % 28), i),
          modelId: i % 2 ? 'm-a' : 'm-b',
          promptTokens: 10 + i,
          ...(i === 0 ? { requestData: { requestBody: '{"q":1}', responseBody: '{"a":1}' } } : {}),
        }),
      ),
    );
    await wallets.chargeMany(
      Array.from({ length: 10 }, (_, i) =>
        chargeRecord(`may-${i}`, owner, BigInt(500 + i), { createdAt: MAY(3 + i, i) }),
      ),
    );
  });
  afterAll(async () => {
    await store?.close();
    await drop();
  });

  it('creates the months ahead once, moving the rows the default partition took for them', async () => {
    expect(await count(sql`tableoid = 'usage_records_default'::regclass`)).toBe(30);
    expect(await ensureUsagePartitions(store.db, new Date('2026-01-15T00:00:00Z'))).toEqual([
      'usage_records_y2026m01',
      'usage_records_y2026m02',
      'usage_records_y2026m03',
    ]);
    // Another replica, or the next day: nothing to do.
    expect(await ensureUsagePartitions(store.db, new Date('2026-01-20T00:00:00Z'))).toEqual([]);
    await ensureUsagePartitions(store.db, new Date('2026-05-15T00:00:00Z'));
    expect(await count(sql`tableoid = 'usage_records_default'::regclass`)).toBe(0);
    expect(await count(sql`tableoid = 'usage_records_y2026m01'::regclass`)).toBe(20);
    expect(await count(sql`tableoid = 'usage_records_y2026m05'::regclass`)).toBe(10);
    // The month attached after the move has the parent's key and indexes, as one created empty.
    const indexes = await store.db.execute(sql`select tablename, count(*)::int as n from pg_indexes
      where tablename in ('usage_records_y2026m01', 'usage_records_y2026m02') group by 1 order by 1`);
    // The key, by organization, key and project in time, and the batch's lines (0030).
    expect(rowsOf<{ n: number }>(indexes).map((r) => Number(r.n))).toEqual([5, 5]);
    // A moved month keeps the key: the same request charged again (dated otherwise) is no new
    // record.
    const again = await new WalletService(store.db).chargeMany([
      chargeRecord('jan-3', { orgId, keyId }, 1003n, { createdAt: MAY(20, 0) }),
      chargeRecord('jan-4', { orgId, keyId }, 1004n, { createdAt: JANUARY(5, 4) }),
    ]);
    expect(again).toEqual([false, false]);
    expect((await verifyWallet(store.db, orgId, { full: true })).differenceCount).toBe(0);
  });

  it('drops the months past retention whole; the rollups, the ledger and wallet verify stay', async () => {
    const reports = new UsageReports(store.db);
    const totalsBefore = await reports.totals({ orgId, ...HALF_YEAR });
    const daysBefore = await reports.groups({ orgId, ...HALF_YEAR }, 'day');
    expect(totalsBefore.requests).toBe(30);
    const entriesBefore = await new WalletService(store.db).ledgerPage(orgId, { limit: 100 });

    expect(await dropExpiredUsageDetail(store.db, 0, new Date('2026-06-15T00:00:00Z'))).toEqual([]);
    // Three months kept before June: March, April, May; January and February go.
    expect(await dropExpiredUsageDetail(store.db, 3, new Date('2026-06-15T00:00:00Z'))).toEqual([
      'usage_records_y2026m01',
      'usage_records_y2026m02',
    ]);
    expect(await dropExpiredUsageDetail(store.db, 3, new Date('2026-06-16T00:00:00Z'))).toEqual([]);
    expect((await usagePartitions(store.db)).map((p) => p.name)).not.toContain('usage_records_y2026m01');

    expect(await count(sql`created_at < '2026-02-01T00:00:00Z'`)).toBe(0);
    expect(await count(sql`created_at >= '2026-05-01T00:00:00Z'`)).toBe(10);
    const bodies = await store.db.execute(sql`select count(*)::int as n from request_data`);
    expect(Number(rowsOf<{ n: number }>(bodies)[0]!.n)).toBe(0);
    expect(await reports.totals({ orgId, ...HALF_YEAR })).toEqual(totalsBefore);
    expect(await reports.groups({ orgId, ...HALF_YEAR }, 'day')).toEqual(daysBefore);
    expect(await new WalletService(store.db).ledgerPage(orgId, { limit: 100 })).toEqual(entriesBefore);

    // The charges are in the ledger's window of their entries (made now); January's lost their
    // usage detail.
    const books = await exportLedger(store.db, orgId, new Date(Date.now() - 86_400_000), new Date(Date.now() + 60_000));
    expect(books.entries).toHaveLength(31);
    expect(books.usage.map((u) => u.requestId).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `may-${i}`));

    const full = await verifyWallet(store.db, orgId, { full: true });
    expect(full.differences).toEqual([]);
    expect(full.ledgerEntries).toBe(31);
    expect((await verifyWallet(store.db, orgId)).differenceCount).toBe(0);
  });

  it('still names a charge past the dropped months whose usage record is gone', async () => {
    await store.db.execute(sql`delete from usage_records where id = 'may-4'`);
    const full = await verifyWallet(store.db, orgId, { full: true });
    expect(full.differences.map((d) => [d.kind, d.requestId])).toEqual([['charge_without_usage', 'may-4']]);
  });
});
