import { and, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Database } from '../../../shared/db/client.js';
import { engineScaling } from '../../../shared/db/schema.js';

/**
 * Where an engine's replica count lives, and the lease on its scaling steps.
 * Every gateway process of a deployment drives the same containers, so they
 * read the count from here on every pass and change it only through `step`:
 * a compare-and-set from the count the caller saw, refused while another
 * process's step holds the lease. `pgScaleStore` keeps it in PostgreSQL (or
 * PGlite, where one process always holds it); `memoryScaleStore` in the
 * process, for an engine started without a store.
 */
export interface ScaleStore {
  /** The count to start from: the stored one, or `initial` stored when there is none. */
  load(initial: number): Promise<number>;
  /** The stored count now; null when there is none (a row deleted by hand: keep what runs). */
  read(): Promise<number | null>;
  /**
   * Sets the count from `from` to `to` and takes the lease for `leaseMs`; false when the count
   * moved or another holder's lease runs.
   */
  step(from: number, to: number, holder: string, leaseMs: number): Promise<boolean>;
  /** Keeps the lease while a step runs (a replica loading, or draining). */
  renew(holder: string, leaseMs: number): Promise<void>;
  release(holder: string): Promise<void>;
  /** An operator's count (`tollgate engines scale`): set at once, whatever runs. */
  set(count: number): Promise<void>;
}

/**
 * @example
 * const store = pgScaleStore(db, 'prod', 'qwen2.5-7b');
 * const desired = await store.load(1);
 */
export function pgScaleStore(db: Database, deployment: string, engine: string): ScaleStore {
  const row = and(eq(engineScaling.deployment, deployment), eq(engineScaling.engine, engine));
  const read = async () => {
    const [found] = await db.select({ desired: engineScaling.desired }).from(engineScaling).where(row);
    return found?.desired;
  };
  return {
    async load(initial) {
      await db.insert(engineScaling).values({ deployment, engine, desired: initial }).onConflictDoNothing();
      return (await read()) ?? initial;
    },
    read: async () => (await read()) ?? null,
    async step(from, to, holder, leaseMs) {
      const free = or(
        isNull(engineScaling.holder),
        eq(engineScaling.holder, holder),
        lt(engineScaling.leaseExpiresAt, sql`now()`),
      );
      const changed = await db
        .update(engineScaling)
        .set({
          desired: to,
          holder,
          leaseExpiresAt: sql`now() + ${leaseMs} * interval '1 millisecond'`,
          changedAt: sql`now()`,
        })
        .where(and(row, eq(engineScaling.desired, from), free))
        .returning({ desired: engineScaling.desired });
      return changed.length === 1;
    },
    async renew(holder, leaseMs) {
      await db
        .update(engineScaling)
        .set({ leaseExpiresAt: sql`now() + ${leaseMs} * interval '1 millisecond'` })
        .where(and(row, eq(engineScaling.holder, holder)));
    },
    async release(holder) {
      await db
        .update(engineScaling)
        .set({ holder: null, leaseExpiresAt: null })
        .where(and(row, eq(engineScaling.holder, holder)));
    },
    async set(count) {
      await db
        .insert(engineScaling)
        .values({ deployment, engine, desired: count })
        .onConflictDoUpdate({
          target: [engineScaling.deployment, engineScaling.engine],
          set: { desired: count, changedAt: sql`now()` },
        });
    },
  };
}

/** The same contract in the process's memory: one process, so the lease is always its own. */
export function memoryScaleStore(): ScaleStore {
  let desired: number | undefined;
  let lease: { holder: string; until: number } | null = null;
  return {
    async load(initial) {
      desired ??= initial;
      return desired;
    },
    read: async () => desired ?? null,
    async step(from, to, holder, leaseMs) {
      if (desired !== from || (lease && lease.holder !== holder && lease.until > Date.now())) return false;
      desired = to;
      lease = { holder, until: Date.now() + leaseMs };
      return true;
    },
    async renew(holder, leaseMs) {
      if (lease?.holder === holder) lease.until = Date.now() + leaseMs;
    },
    async release(holder) {
      if (lease?.holder === holder) lease = null;
    },
    async set(count) {
      desired = count;
    },
  };
}
