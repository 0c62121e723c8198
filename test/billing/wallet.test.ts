import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChargeWriter } from '../../src/billing/charge-writer.js';
import { WalletService, type ChargeRecord } from '../../src/billing/wallet.js';
import { openStore, type Store } from '../../src/db/client.js';
import { ledgerEntries, usageRecords } from '../../src/db/schema.js';
import { createLogger } from '../../src/http/log.js';
import { KeyService } from '../../src/keys/service.js';
import { OrgService } from '../../src/platform/orgs.js';
import { createTestDatabase, postgresAvailable } from '../helpers/services.js';

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

  const record = (id: string, owner: { orgId: string; keyId: string }, cost: bigint): ChargeRecord => ({
    id,
    ...owner,
    projectId: null,
    modelId: 'm',
    endpoint: 'chat.completions',
    promptTokens: 1,
    completionTokens: 1,
    cost,
    status: 200,
    streamed: false,
    usageSource: 'upstream',
    latencyMs: 1,
    ttftMs: null,
  });

  async function ledgerOf(orgId: string) {
    return store.db.select().from(ledgerEntries).where(eq(ledgerEntries.orgId, orgId)).orderBy(ledgerEntries.id);
  }

  it('charges a batch across organizations exactly, once per request id, with a consistent ledger', async () => {
    const a = await tenant(1_000n);
    const b = await tenant(500n);
    const result = await wallets.chargeMany([record('r1', a, 100n), record('r2', b, 50n), record('r3', a, 30n), record('r1', a, 100n), record('r4', a, 0n)]);
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
    expect(await wallets.chargeMany([record('r1', a, 100n), record('r2', b, 50n)])).toEqual([false, false]);
    expect(await wallets.balance(a.orgId)).toBe(870n);
  });

  it('group-commits concurrent writes, and every one is committed when its promise resolves', async () => {
    const a = await tenant(1_000_000n);
    const writer = new ChargeWriter(wallets, createLogger('silent'));
    await Promise.all(Array.from({ length: 40 }, (_, i) => writer.write(record(`g${i}`, a, BigInt(i + 1)))));
    const spent = (40n * 41n) / 2n;
    expect(await wallets.balance(a.orgId)).toBe(1_000_000n - spent);
    const [sum] = await store.db.select({ total: sql<string>`sum(${ledgerEntries.amount})::text` }).from(ledgerEntries).where(eq(ledgerEntries.orgId, a.orgId));
    expect(BigInt(sum!.total)).toBe(1_000_000n - spent);
    const [count] = await store.db.select({ n: sql<number>`count(*)::int` }).from(usageRecords).where(eq(usageRecords.orgId, a.orgId));
    expect(count!.n).toBe(40);
  });

  it('fails only the bad record of a batch', async () => {
    const a = await tenant(1_000n);
    const writer = new ChargeWriter(wallets, createLogger('silent'));
    const bad = { ...record('bad', a, 1n), keyId: 'key_does_not_exist' };
    const results = await Promise.allSettled([writer.write(record('ok1', a, 10n)), writer.write(bad), writer.write(record('ok2', a, 20n))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await wallets.balance(a.orgId)).toBe(970n);
  });
});
