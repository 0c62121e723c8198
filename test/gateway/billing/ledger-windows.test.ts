import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Books } from '../../../src/gateway/billing/books.js';
import { WalletService } from '../../../src/gateway/billing/wallet.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { KeyService } from '../../../src/gateway/keys/service.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import { chargeRecord } from '../../helpers/charges.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';

/**
 * Consecutive windows of the ledger chain: one window closes at the balance
 * the next opens with, even when a charge's statement began before a top-up
 * that took the wallet's lock first. The ledger's order is the wallet lock's
 * (its ids, and each entry's balance after it); an entry dated when its
 * transaction began rather than when it held the lock sits in the window
 * before an entry it follows, and both windows' sums break.
 */

const missing = (await postgresAvailable()) ? null : 'the ledger windows test needs PostgreSQL (two sessions at once)';

describe.skipIf(missing !== null)('ledger windows (postgres)', () => {
  let store: Store;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  /** The session that holds a request id, and one that watches the others. */
  let other: postgres.Sql;
  let look: postgres.Sql;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = await openStore({ databaseUrl: database.url, dataDir: 'memory://' });
    other = postgres(database.url, { max: 1, onnotice: () => {} });
    look = postgres(database.url, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await other?.end();
    await look?.end();
    await store?.close();
    await database?.drop();
  });

  it('dates each entry in the lock order, so one window closes where the next opens', async () => {
    const wallets = new WalletService(store.db);
    const books = new Books(store.db);
    const orgId = (await new OrgService(store.db).create('windows')).id;
    const { key } = await new KeyService(store.db, 'sk-gw-').create({ orgId, name: 'k' });
    await wallets.credit(orgId, 'topup', 1_000n, 'opening');

    // Another session inserts the charge's request id and holds it uncommitted: the charge's
    // statement, begun now, waits on it before it reaches the wallet, as a long batch or a slow
    // disk keeps a statement there. Dated alike, as a request's usage record is wherever its charge
    // is written: the usage records' key is (id, created_at) since they are partitioned by month,
    // so only the same instant makes the charge wait.
    const createdAt = new Date();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const holding = other
      .begin(async (tx) => {
        await tx`insert into usage_records (id, org_id, key_id, model_id, endpoint, prompt_tokens, completion_tokens,
          cost_nanos, status, streamed, usage_source, latency_ms, created_at)
          values ('req_slow', ${orgId}, ${key.id}, 'm', 'chat.completions', 1, 1, 100, 200, false, 'upstream', 1,
            ${createdAt})`;
        await released;
        throw new Error('rolled back');
      })
      .catch(() => {});
    await until('the other session holds the request id', async () => (await waiting()) === 0 && (await held()));
    const charging = wallets.chargeMany([chargeRecord('req_slow', { orgId, keyId: key.id }, 100n, { createdAt })]);
    await until('the charge waits on the other session', async () => (await waiting()) === 1);

    // A top-up begun after the charge commits before it.
    await wallets.credit(orgId, 'topup', 50n, 'later');
    release();
    await holding;
    expect(await charging).toEqual([true]);

    const entries = await look<Array<{ id: number; note: string | null; created_at: Date }>>`
      select id, note, created_at from ledger_entries where org_id = ${orgId} order by id`;
    expect(entries.map((e) => e.note)).toEqual(['opening', 'later', null]);
    // Each entry is dated no earlier than the one before it in the ledger.
    for (let i = 1; i < entries.length; i++)
      expect(entries[i]!.created_at.getTime(), `entry ${entries[i]!.id}`).toBeGreaterThanOrEqual(
        entries[i - 1]!.created_at.getTime(),
      );

    // Windows cut at the later top-up: the first closes where the second opens, and each sums to
    // its closing.
    const cut = entries[1]!.created_at;
    const first = await books.exportLedger(orgId, new Date(0), cut);
    const second = await books.exportLedger(orgId, cut, new Date(Date.now() + 3_600_000));
    expect(second.openingBalance).toBe(first.closingBalance);
    for (const window of [first, second])
      expect(window.openingBalance + window.entries.reduce((sum, e) => sum + e.amount, 0n)).toBe(window.closingBalance);
    expect(second.closingBalance).toBe(950n);
  });

  /** Sessions of the test database waiting on a lock. */
  async function waiting(): Promise<number> {
    const [row] = await look<Array<{ n: number }>>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
    return row!.n;
  }

  async function held(): Promise<boolean> {
    const [row] = await look<Array<{ n: number }>>`
      select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'idle in transaction'`;
    return row!.n === 1;
  }
});

skippedWithout(missing);
