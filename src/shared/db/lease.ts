import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { and, eq, isNull, or, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable, PgUpdateSetSource } from 'drizzle-orm/pg-core';
import type { Database } from './client.js';

/**
 * A name for one holder of leases in this process, as `claimed_by` records it: the host, the
 * process and a random part, so two holders in one process (two runners) are told apart too.
 */
export function replicaId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/**
 * A deadline `ms` from now on the database's clock. Never the replica's own `Date.now()`: a
 * replica whose clock is off would otherwise write leases that end early (its work taken while it
 * lives) or late (a dead replica's work held for as long as its clock is fast).
 */
export function leaseDeadline(ms: number): SQL {
  return sql`now() + make_interval(secs => ${ms / 1000})`;
}

/** Whether a lease column's deadline has passed, on the database's clock. */
export function leaseLapsed(until: PgColumn | SQL): SQL {
  return sql`${until} < now()`;
}

/**
 * A table whose rows are leased: the lease's holder and its deadline, as every leased table names
 * them.
 */
export type LeasedTable = PgTable & { claimedBy: PgColumn; leaseUntil: PgColumn };

/**
 * Leased rows of one table: claimed, renewed, taken over and released by their holders, with every
 * deadline written and compared on the database's clock (`leaseDeadline`, `leaseLapsed`). What is
 * common to the leased tables (background responses, batches, batch lines, platform runs) is
 * here; which rows may be claimed, and what else a claim or a release writes, is each user's.
 */
export class Lease<T extends LeasedTable> {
  constructor(
    private readonly db: Database,
    private readonly table: T,
    /**
     * The column a claim picks rows by (one row's key); null for a table whose key is several
     * columns, whose claims are its own statements (with `deadline` and `lapsed`).
     */
    private readonly key: PgColumn | null,
    /** How long a claim or a renewal holds: the time a dead holder's rows stay held. */
    readonly durationMs: number,
  ) {}

  /** A deadline this lease's duration (or `ms`) from now, on the database's clock. */
  deadline(ms = this.durationMs): SQL {
    return leaseDeadline(ms);
  }

  /** Its holder's lease ran out (the holder died, or stopped renewing). */
  lapsed(): SQL {
    return leaseLapsed(this.table.leaseUntil);
  }

  /** No live lease: never claimed, released, or its holder's lease ran out. */
  open(): SQL {
    return or(isNull(this.table.leaseUntil), this.lapsed())!;
  }

  /** The rows `holder` holds. */
  heldBy(holder: string): SQL {
    return eq(this.table.claimedBy, holder);
  }

  /**
   * Claims for `holder` up to `limit` rows matching `where` (which says what may be claimed: open
   * ones, `this.open()`, or lapsed ones, `this.lapsed()`, besides the user's own conditions), in
   * `order`, writing `set` with the lease. Two holders never claim one row: the candidates are
   * locked (`SKIP LOCKED`) and `where` is checked again as they are updated. The candidates are
   * read once (`= any(array(…))`): with `IN (subquery)` the planner may read them again per row
   * and claim more than `limit`.
   */
  async claim(
    holder: string,
    options: { where: SQL; order?: SQL | PgColumn; limit?: number; set?: PgUpdateSetSource<T> },
  ): Promise<T['$inferSelect'][]> {
    const { where, order, limit = 1, set } = options;
    if (this.key === null) throw new Error('A lease over a table with a key of several columns claims on its own.');
    const candidates = sql`select ${this.key} from ${this.table} where ${where}
      ${order ? sql`order by ${order}` : sql``} limit ${limit} for update skip locked`;
    const rows = await this.db
      .update(this.table)
      .set({ ...set, claimedBy: holder, leaseUntil: this.deadline() } as PgUpdateSetSource<T>)
      .where(and(sql`${this.key} = any(array(${candidates}))`, where))
      .returning();
    return rows as T['$inferSelect'][];
  }

  /** Claims rows whose holder's lease ran out, and that match `where`: a dead holder's work. */
  takeOver(holder: string, options: { where: SQL; order?: SQL | PgColumn; limit?: number }) {
    return this.claim(holder, { ...options, where: and(options.where, this.lapsed())! });
  }

  /**
   * Renews `holder`'s leases on the rows matching `where`; answers the renewed rows' `fields` (a
   * row no longer the holder's is not renewed, and its absence tells the holder it lost it).
   */
  async renew<F extends Record<string, PgColumn>>(holder: string, where: SQL, fields: F) {
    return this.db
      .update(this.table)
      .set({ leaseUntil: this.deadline() } as PgUpdateSetSource<T>)
      .where(and(where, this.heldBy(holder)))
      .returning(fields);
  }

  /**
   * Lets go of `holder`'s rows matching `where`, writing `set`: free at once, or, with
   * `notBeforeMs`, not claimable again before then (on the database's clock). Answers the rows'
   * `fields`; none when `holder` no longer held them.
   */
  async release<F extends Record<string, PgColumn>>(
    holder: string,
    where: SQL,
    options: { set?: PgUpdateSetSource<T>; notBeforeMs?: number; fields: F },
  ) {
    const until = options.notBeforeMs === undefined ? null : this.deadline(options.notBeforeMs);
    return this.db
      .update(this.table)
      .set({ ...options.set, claimedBy: null, leaseUntil: until } as PgUpdateSetSource<T>)
      .where(and(where, this.heldBy(holder)))
      .returning(options.fields);
  }
}
