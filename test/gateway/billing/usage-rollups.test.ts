import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChargeApplier } from '../../../src/gateway/billing/charge-applier.js';
import { ChargeJournal } from '../../../src/gateway/billing/journal.js';
import type { ChargeRecord } from '../../../src/gateway/billing/charge-writes.js';
import { WalletService } from '../../../src/gateway/billing/wallet.js';
import { KeyService } from '../../../src/gateway/keys/service.js';
import { OrgService } from '../../../src/platform/orgs/service.js';
import { ProjectService } from '../../../src/platform/orgs/projects.js';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { OutageLog } from '../../../src/shared/http/outage.js';
import { chargeRecord } from '../../helpers/charges.js';
import { FROM_RECORDS, FROM_ROLLUPS, rollupLines } from '../../helpers/rollups.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

const stores = (await postgresAvailable()) ? ['pglite', 'postgres'] : ['pglite'];

describe.each(stores)('usage rollups written with the charge (%s)', (kind) => {
  let store: Store;
  let drop = async () => {};
  let wallets: WalletService;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-rollups-'));
    if (kind === 'postgres') {
      const database = await createTestDatabase();
      drop = database.drop;
      store = await openStore({ databaseUrl: database.url, dataDir: 'memory://' });
    } else {
      store = await openStore({ dataDir: 'memory://' });
    }
    wallets = new WalletService(store.db);
  });
  afterAll(async () => {
    await store?.close();
    await drop();
    await rm(dir, { recursive: true, force: true });
  });

  /** Two organizations, two keys, a project: mixed traffic over three UTC days, around midnight. */
  async function mixedTraffic(prefix: string): Promise<ChargeRecord[]> {
    const orgs = new OrgService(store.db);
    const keys = new KeyService(store.db, 'sk-gw-');
    const projects = new ProjectService(store.db);
    const a = await orgs.create(`${prefix}-a`);
    const b = await orgs.create(`${prefix}-b`);
    await wallets.credit(a.id, 'topup', 40_000_000_000_000_000n);
    await wallets.credit(b.id, 'topup', 1_000_000n);
    const project = await projects.create({ orgId: a.id, createdBy: null, name: `${prefix}-p` });
    const { key: keyA1 } = await keys.create({ orgId: a.id, name: 'k1' });
    const { key: keyA2 } = await keys.create({ orgId: a.id, name: 'k2', projectId: project.id });
    const { key: keyB } = await keys.create({ orgId: b.id, name: 'k' });
    const owners = [
      { orgId: a.id, keyId: keyA1.id, projectId: null },
      { orgId: a.id, keyId: keyA2.id, projectId: project.id },
      { orgId: b.id, keyId: keyB.id, projectId: null },
    ];
    const times = [
      '2026-05-01T23:59:59.999Z',
      '2026-05-02T00:00:00.000Z',
      '2026-05-02T12:00:00Z',
      '2026-05-03T00:00:01Z',
    ];
    const records: ChargeRecord[] = [];
    for (let i = 0; i < 60; i++) {
      const owner = owners[i % 3]!;
      records.push(
        chargeRecord(`${prefix}-r${i}`, owner, i === 7 ? 9_007_199_254_740_993n : BigInt(i * 1_000 + 3), {
          projectId: owner.projectId,
          modelId: i % 5 === 0 ? 'm-big' : 'm-small',
          promptTokens: 10 + i,
          completionTokens: 5 + (i % 7),
          cachedTokens: i % 5,
          reasoningTokens: i % 3,
          status: i % 11 === 0 ? 502 : 200,
          cacheHit: i % 9 === 0,
          createdAt: new Date(times[i % times.length]!),
        }),
      );
    }
    return records;
  }

  it('sums every inserted record into its day, key, project and model, exactly; repeats add nothing', async () => {
    const records = await mixedTraffic('mix');
    // In batches of different sizes, some records twice in a batch and some batches written twice.
    await wallets.chargeMany([...records.slice(0, 20), records[3]!, records[4]!]);
    await wallets.chargeMany(records.slice(20, 21));
    await wallets.chargeMany(records.slice(21, 45));
    await wallets.chargeMany(records.slice(0, 45));
    await wallets.chargeMany(records.slice(45));
    const rollups = await rollupLines(store.db, FROM_ROLLUPS);
    expect(rollups.length).toBeGreaterThan(10);
    expect(rollups).toEqual(await rollupLines(store.db, FROM_RECORDS));
    expect(rollups.join('\n')).toContain(' 9007199254'); // the cost past 2^53, not rounded
  });

  it('adds nothing when the journal replays, after a crash, charges PostgreSQL already holds', async () => {
    const records = await mixedTraffic('replay');
    const file = path.join(dir, 'charges.journal');
    const log = createLogger('silent');
    const before = await ChargeJournal.open(file);
    for (const record of records) await before.append(record);
    // The transaction committed, and the gateway died before the journal marked the charges
    // applied.
    await wallets.chargeMany(records.slice(0, 40));
    await before.close();
    const journal = await ChargeJournal.open(file);
    expect(journal.pendingCount).toBe(records.length);
    const applier = new ChargeApplier(journal, wallets, new OutageLog(log, 'database', 'test'), log);
    applier.start();
    try {
      expect(await applier.settled(10_000)).toBe(true);
    } finally {
      await applier.stop();
      await journal.close();
    }
    expect(await rollupLines(store.db, FROM_ROLLUPS)).toEqual(await rollupLines(store.db, FROM_RECORDS));
  });
});
