import { eq, sql } from 'drizzle-orm';
import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/shared/db/client.js';
import { Lease, replicaId } from '../../../src/shared/db/lease.js';
import { createTestDatabase, postgresAvailable } from '../../helpers/services.js';

/** A leased table of the test's own, shaped as the four leased tables are. */
const probes = pgTable('lease_probes', {
  id: text('id').primaryKey(),
  state: text('state').notNull(),
  claimedBy: text('claimed_by'),
  leaseUntil: timestamp('lease_until', { withTimezone: true }),
});

const LEASE_MS = 60_000;
const hasPostgres = await postgresAvailable();
const drivers = hasPostgres ? (['pglite', 'postgres'] as const) : (['pglite'] as const);

describe.each(drivers)('the lease over %s', (driver) => {
  let store: Store;
  let drop: (() => Promise<void>) | undefined;
  let lease: Lease<typeof probes>;

  beforeAll(async () => {
    const database = driver === 'postgres' ? await createTestDatabase() : undefined;
    drop = database?.drop;
    store = await openStore({ databaseUrl: database?.url, dataDir: 'memory://', poolSize: 4 });
    await store.db.execute(sql`create table lease_probes
      (id text primary key, state text not null, claimed_by text, lease_until timestamptz)`);
    lease = new Lease(store.db, probes, probes.id, LEASE_MS);
  });
  afterAll(async () => {
    await store?.close();
    await drop?.();
  });

  const reset = async (count: number) => {
    await store.db.delete(probes);
    const rows = Array.from({ length: count }, (_, i) => ({ id: `p${i}`, state: 'queued' }));
    await store.db.insert(probes).values(rows);
  };
  const leftMs = async (id: string) => {
    const [row] = await store.db
      .select({ left: sql<string>`extract(epoch from ${probes.leaseUntil} - now()) * 1000` })
      .from(probes)
      .where(eq(probes.id, id));
    return Number(row!.left);
  };

  it("claims each row once, its deadline a lease from now on the database's clock", async () => {
    await reset(5);
    const [a, b] = [replicaId(), replicaId()];
    expect(a).not.toBe(b);
    const claims = await Promise.all(
      [a, b, a].map((holder) => lease.claim(holder, { where: lease.open(), order: probes.id, limit: 2 })),
    );
    const ids = claims.flat().map((row) => row.id);
    expect(ids.sort()).toEqual(['p0', 'p1', 'p2', 'p3', 'p4']);
    expect(claims.every((rows) => rows.length <= 2)).toBe(true);
    const left = await leftMs(ids[0]!);
    expect(left).toBeGreaterThan(LEASE_MS - 5_000);
    expect(left).toBeLessThanOrEqual(LEASE_MS);
  });

  it('takes over only rows whose lease ran out; renews only its holder', async () => {
    await reset(2);
    await lease.claim('dead', { where: lease.open(), order: probes.id, limit: 2, set: { state: 'running' } });
    expect(await lease.takeOver('alive', { where: eq(probes.state, 'running'), limit: 2 })).toEqual([]);
    await store.db
      .update(probes)
      .set({ leaseUntil: sql`now() - interval '1 second'` })
      .where(eq(probes.id, 'p0'));
    const taken = await lease.takeOver('alive', { where: eq(probes.state, 'running'), limit: 2 });
    expect(taken.map((row) => [row.id, row.claimedBy])).toEqual([['p0', 'alive']]);
    const renewed = await lease.renew('dead', sql`true`, { id: probes.id });
    expect(renewed.map((row) => row.id)).toEqual(['p1']);
  });

  it('releases to free rows, or to rows claimable only after a while', async () => {
    await reset(2);
    await lease.claim('one', { where: lease.open(), order: probes.id, limit: 2 });
    expect(await lease.release('other', sql`true`, { fields: { id: probes.id } })).toEqual([]);
    await lease.release('one', eq(probes.id, 'p0'), { set: { state: 'waiting' }, fields: { id: probes.id } });
    await lease.release('one', eq(probes.id, 'p1'), { notBeforeMs: 30_000, fields: { id: probes.id } });
    const again = await lease.claim('two', { where: lease.open(), limit: 2 });
    expect(again.map((row) => [row.id, row.state])).toEqual([['p0', 'waiting']]);
    expect(await leftMs('p1')).toBeGreaterThan(25_000);
  });
});
