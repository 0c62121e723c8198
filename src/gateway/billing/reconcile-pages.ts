import { type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerEntries, usageRecords } from '../../shared/db/schema.js';
import type { DigestedEntry } from './ledger-checkpoints.js';
import { rowsOf } from './rows.js';

/**
 * The rows a verification reads, a page per statement: none runs long (the reports pool's statement timeout),
 * memory holds one page, and on PGlite, whose one connection the billed path shares, a charge waits at most a
 * page's read.
 */
export const PAGE_ROWS = 2_000;
const UTC_MICROS = sql.raw(`'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`);

/** A ledger entry with the usage record its charge names (`cost` null: none of the organization's). */
export interface EntryRow extends DigestedEntry {
  usage_id: string | null;
  cost: string | null;
}

/** A usage record, and whether a charge of its organization names it. */
export interface UsageRow {
  id: string;
  key: string;
  cost: string;
  charged: boolean;
}

/**
 * The organization's ledger entries with `after < id <= upTo`, in id order (the order of the wallet's lock, so
 * each one's balance follows the one before), on the (org_id, id) index.
 */
export async function* entryPages(db: Database, orgId: string, after: number, upTo: number) {
  let from = after;
  for (;;) {
    const rows = rowsOf<EntryRow>(
      await db.execute(sql`select e.id::text as id, e.kind, e.amount_nanos::text as amount,
          e.balance_after_nanos::text as balance_after, e.request_id, e.note,
          to_char(e.created_at at time zone 'UTC', ${UTC_MICROS}) as at, u.id as usage_id, u.cost_nanos::text as cost
        from ${ledgerEntries} e
          left join ${usageRecords} u on e.kind = 'charge' and u.id = e.request_id and u.org_id = e.org_id
        where e.org_id = ${orgId} and e.id > ${from} and e.id <= ${upTo}
        order by e.id limit ${PAGE_ROWS}`),
    );
    if (rows.length > 0) yield rows;
    if (rows.length < PAGE_ROWS) return;
    from = Number(rows.at(-1)!.id);
  }
}

/** The organization's usage records dated from `since` (all: null), in time order, on the (org_id, created_at) index. */
export async function* usagePages(db: Database, orgId: string, since: Date | null) {
  let after: { key: string; id: string } | null = null;
  for (;;) {
    const conditions: SQL[] = [sql`u.org_id = ${orgId}`];
    if (since) conditions.push(sql`u.created_at >= ${since.toISOString()}::timestamptz`);
    if (after)
      conditions.push(
        sql`u.created_at >= ${after.key}::timestamptz and (u.created_at, u.id) > (${after.key}::timestamptz, ${after.id})`,
      );
    const rows = rowsOf<UsageRow>(
      await db.execute(sql`select u.id, to_char(u.created_at at time zone 'UTC', ${UTC_MICROS}) as key,
          u.cost_nanos::text as cost,
          exists (select 1 from ${ledgerEntries} l
            where l.request_id = u.id and l.org_id = u.org_id and l.kind = 'charge') as charged
        from ${usageRecords} u where ${sql.join(conditions, sql` and `)}
        order by u.created_at, u.id limit ${PAGE_ROWS}`),
    );
    if (rows.length > 0) yield rows;
    if (rows.length < PAGE_ROWS) return;
    const last = rows.at(-1)!;
    after = { key: last.key, id: last.id };
  }
}

/**
 * Where the books stand, in one statement (one snapshot): the wallet's balance, the organization's last entry
 * (a verification reads up to it: later charges are the next one's) and the database's clock. Entries are made
 * under the wallet's lock, so every entry up to the last one seen here is committed.
 */
export async function booksNow(db: Database, orgId: string) {
  const [row] = rowsOf<{ balance: string; last_id: string | null; now: string }>(
    await db.execute(sql`select w.balance_nanos::text as balance,
        (select max(id) from ${ledgerEntries} where org_id = ${orgId})::text as last_id,
        to_char(now() at time zone 'UTC', ${UTC_MICROS}) as now
      from wallets w where w.org_id = ${orgId}`),
  );
  return row ? { balance: BigInt(row.balance), lastId: Number(row.last_id ?? 0), now: new Date(row.now) } : null;
}
