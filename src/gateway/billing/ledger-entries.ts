import { and, desc, eq, gte, inArray, lt, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerEntries, type LedgerKind, usageRecords } from '../../shared/db/schema.js';

// The ledger read: an organization's entries, newest first, a page at a time; and the time an
// entry is written with.

export type LedgerEntry = typeof ledgerEntries.$inferSelect;

/** Which page of the ledger `ledgerPage` reads, and what it is narrowed to. */
export interface LedgerPageOptions {
  limit: number;
  before?: number;
  keyId?: string;
  kind?: LedgerKind;
  from?: Date;
  to?: Date;
}

/**
 * A ledger entry's time: the clock when it is written, which is after its wallet's row is locked,
 * not the transaction's start (`now()`, the column's default). Entries are made in the order of
 * that lock (their ids, and each one's balance after it), so their times follow it too, and a
 * window of the ledger by time is a run of it: one window closes at the balance the next opens with
 * (`ledger-export.ts`).
 */
export const LOCKED_NOW = sql`clock_timestamp()`;

/** An organization's newest ledger entries, newest first. */
export function recentLedger(db: Database, orgId: string, limit = 100): Promise<LedgerEntry[]> {
  return db
    .select()
    .from(ledgerEntries)
    .where(eq(ledgerEntries.orgId, orgId))
    .orderBy(desc(ledgerEntries.id))
    .limit(limit);
}

/**
 * One page of the ledger, newest first, entries older than `before` (an
 * entry id) when given: keyset pagination on the (org_id, id) index, so
 * every entry is reachable and a deep page costs what the first does.
 * Narrowed to one key's charges (`keyId`, through the charge's usage
 * record), one kind, or one UTC day [`from`, `to`).
 */
export async function ledgerPage(
  db: Database,
  orgId: string,
  { limit, before, keyId, kind, from, to }: LedgerPageOptions,
): Promise<{ entries: LedgerEntry[]; next: number | null }> {
  const conditions = [eq(ledgerEntries.orgId, orgId)];
  if (before !== undefined) conditions.push(lt(ledgerEntries.id, before));
  if (kind) conditions.push(eq(ledgerEntries.kind, kind));
  if (from) conditions.push(gte(ledgerEntries.createdAt, from));
  if (to) conditions.push(lt(ledgerEntries.createdAt, to));
  if (keyId)
    conditions.push(
      inArray(
        ledgerEntries.requestId,
        db
          .select({ id: usageRecords.id })
          .from(usageRecords)
          .where(and(eq(usageRecords.orgId, orgId), eq(usageRecords.keyId, keyId))),
      ),
    );
  const rows = await db
    .select()
    .from(ledgerEntries)
    .where(and(...conditions))
    .orderBy(desc(ledgerEntries.id))
    .limit(limit + 1);
  const entries = rows.slice(0, limit);
  return { entries, next: rows.length > limit ? entries.at(-1)!.id : null };
}
