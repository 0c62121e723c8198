import { type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerEntries, usageRecords } from '../../shared/db/schema.js';
import { rowsOf } from '../../shared/db/rows.js';

/**
 * The rows a verification reads, a page per statement: none runs long (the reports pool's statement
 * timeout), memory holds one page, and on PGlite, whose one connection the billed path shares, a
 * charge waits at most a page's read.
 */
export const PAGE_ROWS = 2_000;
const UTC_MICROS = sql.raw(`'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`);

/**
 * A page's bounds written into its statement, not sent as parameters: a prepared statement's
 * generic plan (which postgres.js's gets after five runs) knows no bound to plan a page by. Only
 * integers and times of the fixed form below are written so.
 */
const literal = (n: number | bigint) => sql.raw(BigInt(n).toString());
function time(text: string): SQL {
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$/.test(text)) throw new Error(`not a UTC time: ${text}`);
  return sql.raw(`'${text}'::timestamptz`);
}

/**
 * An entry whose running balance or charge is wrong: id, kind, request, usage record, its expected
 * balance, its balance, amount, cost.
 */
export type BadEntry = [string, string, string | null, string | null, string, string, string, string | null];

/**
 * A page of the ledger, summed up in PostgreSQL: its count, last entry, amounts' sum, last balance,
 * rows' hashes, and bad rows.
 */
export interface EntryPage {
  n: number;
  lastId: number;
  sum: bigint;
  lastBalance: bigint;
  /** Each entry's SHA-256 (`ENTRY_TEXT`), as hex, one after the other in id order. */
  hashes: string;
  bad: BadEntry[];
}

/**
 * An entry's fields as the digest covers them: a JSON array, so no field's text runs into the next;
 * its time to the microsecond in UTC.
 */
const ENTRY_TEXT = sql.raw(`json_build_array(id::text, kind, amount_nanos::text, balance_after_nanos::text,
  request_id, note, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text`);

/**
 * The organization's ledger entries with `after < id <= upTo`, in id order (the order of the
 * wallet's lock, so each one's balance follows the one before, `balanceBefore()` for a page's
 * first), on the (org_id, id) index. The checks run in the database and only a page's sums, its
 * hashes and its bad rows come back. A charge up to `usage_detail_horizon.through_entry_id` may
 * name a record of a month dropped past retention (`usage-partitions.ts`).
 */
export async function* entryPages(
  db: Database,
  orgId: string,
  after: number,
  upTo: number,
  balanceBefore: () => bigint,
): AsyncGenerator<EntryPage> {
  let from = after;
  while (from < upTo) {
    const [row] = rowsOf<{
      n: number;
      last_id: string;
      sum: string;
      last_balance: string;
      hashes: string;
      bad: string;
    }>(
      await db.execute(sql`with page as (
          select e.id, e.kind, e.amount_nanos, e.balance_after_nanos, e.request_id, e.note, e.created_at,
            u.id as usage_id, u.cost_nanos
          from ${ledgerEntries} e
            left join ${usageRecords} u on e.kind = 'charge' and u.id = e.request_id and u.org_id = e.org_id
          where e.org_id = ${orgId} and e.id > ${literal(from)} and e.id <= ${literal(upTo)}
          order by e.id limit ${PAGE_ROWS}),
        checked as (
          select *, coalesce(lag(balance_after_nanos) over (order by id), ${literal(balanceBefore())}::bigint)
            + amount_nanos as expected
          from page)
        select count(*)::int as n, max(id)::text as last_id, coalesce(sum(amount_nanos), 0)::text as sum,
          (array_agg(balance_after_nanos order by id desc))[1]::text as last_balance,
          coalesce(string_agg(encode(sha256(convert_to(${ENTRY_TEXT}, 'UTF8')), 'hex'), '' order by id), '') as hashes,
          coalesce(json_agg(json_build_array(id::text, kind, request_id, usage_id, expected::text,
            balance_after_nanos::text, amount_nanos::text, cost_nanos::text) order by id)
            filter (where balance_after_nanos <> expected
              or (kind = 'charge' and ((usage_id is null and id > (select coalesce(max(through_entry_id), 0)
                from usage_detail_horizon)) or cost_nanos <> -amount_nanos))), '[]')::text as bad
        from checked`),
    );
    if (!row || row.n === 0) return;
    const page: EntryPage = {
      n: Number(row.n),
      lastId: Number(row.last_id),
      sum: BigInt(row.sum),
      lastBalance: BigInt(row.last_balance),
      hashes: row.hashes,
      bad: JSON.parse(row.bad) as BadEntry[],
    };
    yield page;
    if (page.n < PAGE_ROWS) return;
    from = page.lastId;
  }
}

/**
 * A page of usage records: how many, the last one's place, and those with a cost that no charge
 * names (id, cost).
 */
export interface UsagePage {
  n: number;
  lastKey: string;
  uncharged: Array<[string, string]>;
}

/**
 * The organization's usage records dated from `since` (all: null), in time order, on the (org_id,
 * created_at) index; each with a cost looked up among its organization's charges by request id (the
 * ledger's unique index).
 */
export async function* usagePages(db: Database, orgId: string, since: Date | null): AsyncGenerator<UsagePage> {
  let after: { key: string; id: string } | null = null;
  for (;;) {
    const conditions: SQL[] = [sql`u.org_id = ${orgId}`];
    if (since) conditions.push(sql`u.created_at >= ${time(since.toISOString())}`);
    if (after)
      conditions.push(
        sql`u.created_at >= ${time(after.key)} and (u.created_at, u.id) > (${time(after.key)}, ${after.id})`,
      );
    const [row] = rowsOf<{ n: number; last_key: string | null; last_id: string | null; uncharged: string }>(
      await db.execute(sql`with page as (
          select u.id, u.created_at, u.cost_nanos, u.org_id from ${usageRecords} u
          where ${sql.join(conditions, sql` and `)}
          order by u.created_at, u.id limit ${PAGE_ROWS}),
        last as (select id, created_at from page order by created_at desc, id desc limit 1)
        select (select count(*) from page)::int as n, (select id from last) as last_id,
          (select to_char(created_at at time zone 'UTC', ${UTC_MICROS}) from last) as last_key,
          coalesce((select json_agg(json_build_array(p.id, p.cost_nanos::text) order by p.created_at, p.id)
            from page p where p.cost_nanos <> 0 and not exists (select 1 from ${ledgerEntries} l
              where l.request_id = p.id and l.org_id = p.org_id and l.kind = 'charge')), '[]')::text as uncharged`),
    );
    if (!row || Number(row.n) === 0) return;
    yield { n: Number(row.n), lastKey: row.last_key!, uncharged: JSON.parse(row.uncharged) as Array<[string, string]> };
    if (Number(row.n) < PAGE_ROWS) return;
    after = { key: row.last_key!, id: row.last_id! };
  }
}

/**
 * Where the books stand, in one statement (one snapshot): the wallet's balance, the organization's
 * last entry (a verification reads up to it: later charges are the next one's) and the database's
 * clock. Entries are made under the wallet's lock, so every entry up to the last one seen here is
 * committed.
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
