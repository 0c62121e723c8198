import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ChargeApplier, type ChargeApplierOptions } from '../../../src/gateway/billing/charge-applier.js';
import { ChargeJournal } from '../../../src/gateway/billing/journal.js';
import { OutageLog } from '../../../src/shared/http/outage.js';
import { WalletService } from '../../../src/gateway/billing/wallet.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { ledgerEntries, requestData, usageRecords } from '../../../src/shared/db/schema.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { KeyService } from '../../../src/gateway/keys/service.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import { chargeRecord } from '../../helpers/charges.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

const stores = (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];

describe.each(stores)('wallet ledger (%s)', (kind) => {
  let store: Store;
  let drop = async () => {};
  let wallets: WalletService;
  let orgs: OrgService;
  let keys: KeyService;

  beforeAll(async () => {
    if (kind === 'postgres') {
      const database = await createTestDatabase();
      drop = database.drop;
      store = await openStore({ databaseUrl: database.url, dataDir: 'memory://' });
    } else {
      store = await openStore({ dataDir: 'memory://' });
    }
    wallets = new WalletService(store.db);
    orgs = new OrgService(store.db);
    keys = new KeyService(store.db, 'sk-gw-');
  });
  afterAll(async () => {
    await store?.close();
    await drop();
  });

  async function tenant(credit: bigint) {
    const org = await orgs.create('t');
    await wallets.credit(org.id, 'topup', credit);
    const { key } = await keys.create({ orgId: org.id, name: 'k' });
    return { orgId: org.id, keyId: key.id };
  }

  async function ledgerOf(orgId: string) {
    return store.db.select().from(ledgerEntries).where(eq(ledgerEntries.orgId, orgId)).orderBy(ledgerEntries.id);
  }

  it('charges a batch across organizations exactly, once per request id, with a consistent ledger', async () => {
    const a = await tenant(1_000n);
    const b = await tenant(500n);
    const result = await wallets.chargeMany([
      chargeRecord('r1', a, 100n),
      chargeRecord('r2', b, 50n),
      chargeRecord('r3', a, 30n),
      chargeRecord('r1', a, 100n),
      chargeRecord('r4', a, 0n),
    ]);
    expect(result).toEqual([true, true, true, false, true]);
    expect(await wallets.balance(a.orgId)).toBe(870n);
    expect(await wallets.balance(b.orgId)).toBe(450n);
    const ledgerA = await ledgerOf(a.orgId);
    expect(ledgerA.map((e) => [e.kind, e.amount, e.balanceAfter])).toEqual([
      ['topup', 1_000n, 1_000n],
      ['charge', -100n, 900n],
      ['charge', -30n, 870n],
    ]);
    // A repeated batch changes nothing.
    expect(await wallets.chargeMany([chargeRecord('r1', a, 100n), chargeRecord('r2', b, 50n)])).toEqual([false, false]);
    expect(await wallets.balance(a.orgId)).toBe(870n);
  });

  it('writes every field of a batch as it was made: costs past 2^53, nulls, times, and bodies with any text', async () => {
    const a = await tenant(20_000_000_000_000_000n);
    const huge = 9_007_199_254_740_993n; // 2^53 + 1: a float would round it
    const madeAt = new Date('2026-03-04T05:06:07.089Z');
    const bodies = {
      requestBody: '{"messages":[{"content":"quote \\" and \\u0000, tab\\t"}]}',
      responseBody: 'line one\nline two: ünïcödé 🚀 \'"',
    };
    const records = [
      chargeRecord('big', a, huge, {
        projectId: null,
        ttftMs: 17,
        createdAt: madeAt,
        streamed: true,
        usageSource: 'clamped',
        promptTokens: 2_000_000,
        completionTokens: 0,
      }),
      chargeRecord('kept', a, 7n, { requestData: bodies, cacheHit: true, status: 499 }),
    ];
    expect(await wallets.chargeMany(records)).toEqual([true, true]);
    expect(await wallets.balance(a.orgId)).toBe(20_000_000_000_000_000n - huge - 7n);
    const [big] = await store.db.select().from(usageRecords).where(eq(usageRecords.id, 'big'));
    expect(big).toMatchObject({
      cost: huge,
      projectId: null,
      ttftMs: 17,
      createdAt: madeAt,
      streamed: true,
      usageSource: 'clamped',
      promptTokens: 2_000_000,
      completionTokens: 0,
      cacheHit: false,
    });
    const [kept] = await store.db.select().from(usageRecords).where(eq(usageRecords.id, 'kept'));
    expect(kept).toMatchObject({ cost: 7n, ttftMs: null, cacheHit: true, status: 499, streamed: false });
    const stored = await store.db.select().from(requestData);
    expect(stored.map((row) => [row.requestId, row.requestBody, row.responseBody])).toEqual([
      ['kept', bodies.requestBody, bodies.responseBody],
    ]);
    expect((await ledgerOf(a.orgId)).map((e) => [e.amount, e.balanceAfter])).toEqual([
      [20_000_000_000_000_000n, 20_000_000_000_000_000n],
      [-huge, 20_000_000_000_000_000n - huge],
      [-7n, 20_000_000_000_000_000n - huge - 7n],
    ]);
  });

  /** A journal in memory and its applier writing to this store, as the gateway runs them. */
  async function applierOver(options: ChargeApplierOptions = {}) {
    const log = createLogger('silent');
    const journal = await ChargeJournal.open(null);
    const applier = new ChargeApplier(journal, wallets, new OutageLog(log, 'database', 'test'), log, options);
    applier.start();
    return { journal, applier };
  }

  it('group-commits journaled charges, every one written once, in fewer transactions than charges', async () => {
    const a = await tenant(1_000_000n);
    const { journal, applier } = await applierOver();
    const batches: number[] = [];
    const chargeMany = wallets.chargeMany.bind(wallets);
    wallets.chargeMany = (records) => {
      batches.push(records.length);
      return chargeMany(records);
    };
    try {
      await Promise.all(Array.from({ length: 40 }, (_, i) => journal.append(chargeRecord(`g${i}`, a, BigInt(i + 1)))));
      expect(await applier.settled(10_000)).toBe(true);
    } finally {
      wallets.chargeMany = chargeMany;
      await applier.stop();
    }
    const spent = (40n * 41n) / 2n;
    expect(await wallets.balance(a.orgId)).toBe(1_000_000n - spent);
    const [sum] = await store.db
      .select({ total: sql<string>`sum(${ledgerEntries.amount})::text` })
      .from(ledgerEntries)
      .where(eq(ledgerEntries.orgId, a.orgId));
    expect(BigInt(sum!.total)).toBe(1_000_000n - spent);
    const [count] = await store.db
      .select({ n: sql<number>`count(*)::int` })
      .from(usageRecords)
      .where(eq(usageRecords.orgId, a.orgId));
    expect(count!.n).toBe(40);
    expect(batches.reduce((x, y) => x + y, 0)).toBe(40);
    expect(batches.length).toBeLessThan(40);
  });

  it('writes the good records of a batch and sets aside only the one the database refuses', async () => {
    const a = await tenant(1_000n);
    const { journal, applier } = await applierOver();
    const bad = { ...chargeRecord('bad', a, 1n), keyId: 'key_does_not_exist' };
    await Promise.all([
      journal.append(chargeRecord('ok1', a, 10n)),
      journal.append(bad),
      journal.append(chargeRecord('ok2', a, 20n)),
    ]);
    expect(await applier.settled(10_000)).toBe(true);
    await applier.stop();
    expect(await wallets.balance(a.orgId)).toBe(970n);
  });

  it('lets a reader wait for the charges journaled before it, without the gather, and not for those after it', async () => {
    const a = await tenant(1_000n);
    // A gather longer than the test's timeout: only the reader can cut it short.
    const { journal, applier } = await applierOver({ gatherMs: 60_000 });
    const chargeMany = wallets.chargeMany.bind(wallets);
    let releaseFirst = () => {};
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let batches = 0;
    wallets.chargeMany = async (records) => {
      batches += 1;
      if (batches === 1) await firstHeld;
      return chargeMany(records);
    };
    try {
      await journal.append(chargeRecord('before-read', a, 10n));
      const read = applier.written(10_000);
      await vi.waitFor(() => expect(batches).toBe(1)); // the gather was cut: the first batch is being written
      await journal.append(chargeRecord('after-read', a, 20n));
      releaseFirst();
      expect(await read).toBe(true);
      expect(await wallets.balance(a.orgId)).toBe(990n);
      // The charge journaled after the read began waits for its own gather, and the read did not
      // wait for it.
      expect(journal.isPending('after-read')).toBe(true);
      expect(await applier.written(10_000)).toBe(true);
      expect(await wallets.balance(a.orgId)).toBe(970n);
    } finally {
      wallets.chargeMany = chargeMany;
      await applier.stop();
    }
  });

  it('answers a reader at once when nothing is pending, and false when the charges cannot be written in time', async () => {
    const a = await tenant(1_000n);
    const { journal, applier } = await applierOver({ retryMs: 50 });
    expect(await applier.written(1)).toBe(true);
    const chargeMany = wallets.chargeMany.bind(wallets);
    wallets.chargeMany = () => Promise.reject(new Error('database unreachable'));
    try {
      await journal.append(chargeRecord('stuck', a, 10n));
      expect(await applier.written(200)).toBe(false);
      expect(journal.isPending('stuck')).toBe(true);
    } finally {
      wallets.chargeMany = chargeMany;
      await applier.stop();
    }
  });
});
