import { sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerEntries, usageRecords, wallets } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';

/** The most differences one verification lists (all are counted): a broken ledger is read from its first ones. */
export const MAX_DIFFERENCES_LISTED = 100;

/** What kind of disagreement a difference is. */
export type DifferenceKind =
  /** The wallet's balance is not the ledger's sum. */
  | 'balance_differs'
  /** An entry's `balance_after` is not the entry before it plus its amount. */
  | 'entry_balance_differs'
  /** A charge's amount is not its usage record's cost. */
  | 'charge_differs'
  /** A usage record with a cost has no charge in the ledger. */
  | 'usage_without_charge'
  /** A charge names no usage record of the organization. */
  | 'charge_without_usage';

/** One place where the books disagree, named by the ledger entry and the request it concerns. */
export interface Difference {
  kind: DifferenceKind;
  ledgerEntryId: number | null;
  requestId: string | null;
  /** What the other side says it should be, in nano-units. */
  expected: bigint;
  /** What this row holds, in nano-units. */
  found: bigint;
}

export interface Verification {
  orgId: string;
  /** The wallet's balance column. */
  walletBalance: bigint;
  /** The ledger's amounts summed. */
  ledgerSum: bigint;
  ledgerEntries: number;
  usageRecords: number;
  differences: Difference[];
  /** All differences found (only the first `MAX_DIFFERENCES_LISTED` are listed). */
  differenceCount: number;
}

/**
 * Recomputes an organization's books from the bottom up, in PostgreSQL
 * (three aggregate statements, whatever the history's length): the ledger
 * from the usage records (each record with a cost has exactly one charge of
 * minus that cost, keyed by its request id), each entry's running balance
 * from the one before, and the wallet's balance from the ledger's sum.
 * Usage record, charge and balance are written in one transaction
 * (`WalletService.chargeMany`), so any difference is a row changed after
 * the fact, and it is named.
 *
 * @example
 * const v = await verifyWallet(db, 'org_1'); // v.differences: [] when the books agree
 */
export async function verifyWallet(db: Database, orgId: string): Promise<Verification> {
  const [totals] = rowsOf<{ balance: string; ledger_sum: string; entries: string; usage: string }>(
    await db.execute(sql`select ${wallets.balance}::text as balance,
        (select coalesce(sum(amount_nanos), 0)::text from ${ledgerEntries} where org_id = ${orgId}) as ledger_sum,
        (select count(*)::text from ${ledgerEntries} where org_id = ${orgId}) as entries,
        (select count(*)::text from ${usageRecords} where org_id = ${orgId}) as usage
      from ${wallets} where ${wallets.orgId} = ${orgId}`),
  );
  if (!totals) throw new GatewayError('not_found', `Organization ${orgId} has no wallet.`, { status: 404 });
  const walletBalance = BigInt(totals.balance);
  const ledgerSum = BigInt(totals.ledger_sum);
  const differences: Difference[] =
    walletBalance === ledgerSum
      ? []
      : [{ kind: 'balance_differs', ledgerEntryId: null, requestId: null, expected: ledgerSum, found: walletBalance }];
  const chain = await runningBalanceDifferences(db, orgId);
  const charges = await chargeDifferences(db, orgId);
  const found = [...chain, ...charges];
  return {
    orgId,
    walletBalance,
    ledgerSum,
    ledgerEntries: Number(totals.entries),
    usageRecords: Number(totals.usage),
    differences: [...differences, ...found.map(toDifference)].slice(0, MAX_DIFFERENCES_LISTED),
    differenceCount: differences.length + totalOf(chain) + totalOf(charges),
  };
}

interface DifferenceRow {
  kind: DifferenceKind;
  entry_id: string | null;
  request_id: string | null;
  expected: string;
  found: string;
  total: string;
}

/** Entries whose `balance_after` is not the previous entry's plus their amount (in id order: the order of the wallet's lock). */
async function runningBalanceDifferences(db: Database, orgId: string): Promise<DifferenceRow[]> {
  return rowsOf<DifferenceRow>(
    await db.execute(sql`with chain as (
        select id, request_id, balance_after_nanos,
          coalesce(lag(balance_after_nanos) over (order by id), 0) + amount_nanos as expected
        from ${ledgerEntries} where org_id = ${orgId}),
      bad as (select * from chain where balance_after_nanos <> expected)
      select 'entry_balance_differs' as kind, id::text as entry_id, request_id, expected::text as expected,
        balance_after_nanos::text as found, count(*) over ()::text as total
      from bad order by id limit ${MAX_DIFFERENCES_LISTED}`),
  );
}

/** Usage records against charges, joined by request id: a cost with no charge, a charge with no record, or amounts that differ. */
async function chargeDifferences(db: Database, orgId: string): Promise<DifferenceRow[]> {
  return rowsOf<DifferenceRow>(
    await db.execute(sql`with usage as (
        select id, cost_nanos from ${usageRecords} where org_id = ${orgId}),
      charges as (
        select id, request_id, -amount_nanos as charged from ${ledgerEntries} where org_id = ${orgId} and kind = 'charge'),
      paired as (
        select c.id as entry_id, coalesce(u.id, c.request_id) as request_id, u.cost_nanos, c.charged,
          case when c.id is null then 'usage_without_charge'
               when u.id is null then 'charge_without_usage'
               else 'charge_differs' end as kind
        from usage u full join charges c on c.request_id = u.id
        where (c.id is null and u.cost_nanos <> 0) or u.id is null or u.cost_nanos <> c.charged)
      select kind, entry_id::text as entry_id, request_id, coalesce(cost_nanos, 0)::text as expected,
        coalesce(charged, 0)::text as found, count(*) over ()::text as total
      from paired order by entry_id nulls first, request_id limit ${MAX_DIFFERENCES_LISTED}`),
  );
}

/** Every row carries the count of all its statement's differences (`count(*) over ()`, before the limit). */
const totalOf = (rows: DifferenceRow[]) => (rows[0] ? Number(rows[0].total) : 0);

function toDifference(row: DifferenceRow): Difference {
  return {
    kind: row.kind,
    ledgerEntryId: row.entry_id === null ? null : Number(row.entry_id),
    requestId: row.request_id,
    expected: BigInt(row.expected),
    found: BigInt(row.found),
  };
}

/** postgres.js returns rows as the result; PGlite wraps them in `{ rows }`. */
export function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? []);
}
