import { desc, eq, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { ledgerEntries, type LedgerKind, usageRecords, wallets } from '../db/schema.js';
import { GatewayError } from '../http/errors.js';

export type LedgerEntry = typeof ledgerEntries.$inferSelect;
export type UsageRecordInput = typeof usageRecords.$inferInsert;

/**
 * The prepaid wallet: one balance per organization and an append-only ledger
 * whose amounts always sum to it. Every change of balance is one transaction
 * that updates the balance and appends the entry.
 *
 * @example
 * const wallets = new WalletService(db);
 * await wallets.credit(orgId, 'topup', parseAmount('12.50'));
 */
export class WalletService {
  constructor(private readonly db: Database) {}

  async balance(orgId: string): Promise<bigint> {
    const [row] = await this.db.select({ balance: wallets.balance }).from(wallets).where(eq(wallets.orgId, orgId));
    if (!row) throw new GatewayError('not_found', `Organization ${orgId} has no wallet.`, { status: 404 });
    return row.balance;
  }

  /** Adds a signed amount (top-ups positive; adjustments either way) and returns the new balance. */
  async credit(orgId: string, kind: Exclude<LedgerKind, 'charge'>, amount: bigint, note?: string): Promise<bigint> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx
        .update(wallets)
        .set({ balance: sql`${wallets.balance} + ${amount}`, updatedAt: new Date() })
        .where(eq(wallets.orgId, orgId))
        .returning({ balance: wallets.balance });
      if (!row) throw new GatewayError('not_found', `Organization ${orgId} does not exist.`, { status: 404 });
      await tx.insert(ledgerEntries).values({ orgId, kind, amount, balanceAfter: row.balance, note: note ?? null });
      return row.balance;
    });
  }

  ledger(orgId: string, limit = 100): Promise<LedgerEntry[]> {
    return this.db.select().from(ledgerEntries).where(eq(ledgerEntries.orgId, orgId)).orderBy(desc(ledgerEntries.id)).limit(limit);
  }

  /** Records one request's usage and charges it; false when that request was already recorded. */
  async charge(record: ChargeRecord): Promise<boolean> {
    const [inserted] = await this.chargeMany([record]);
    return inserted!;
  }

  /**
   * Records usage and charges for many requests in one transaction: three
   * statements whatever the count, which is what lets `ChargeWriter` group
   * concurrent requests into one commit. A usage record's id is its request id,
   * so a request written twice inserts nothing and charges nothing the second
   * time. Returns, per record, whether it was new.
   */
  async chargeMany(records: ChargeRecord[]): Promise<boolean[]> {
    if (records.length === 0) return [];
    // Within one batch the first record of a request id counts; the others are repeats.
    const seen = new Set<string>();
    const firsts = new Set(records.filter((r) => !seen.has(r.id) && seen.add(r.id)));
    return this.db.transaction(async (tx) => {
      const inserted = await tx.insert(usageRecords).values([...firsts]).onConflictDoNothing({ target: usageRecords.id }).returning({ id: usageRecords.id });
      const isNew = new Set(inserted.map((row) => row.id));
      const charges = [...firsts].filter((r) => isNew.has(r.id) && r.cost !== 0n);
      if (charges.length > 0) {
        const totals = new Map<string, bigint>();
        for (const charge of charges) totals.set(charge.orgId, (totals.get(charge.orgId) ?? 0n) + charge.cost);
        const debits = sql.join([...totals].map(([orgId, total]) => sql`(${orgId}, ${total}::bigint)`), sql`, `);
        const updated = await tx.execute<{ org_id: string; balance_nanos: string }>(
          sql`update ${wallets} set balance_nanos = ${wallets.balance} - debit.total, updated_at = now()
              from (values ${debits}) as debit(org_id, total)
              where ${wallets.orgId} = debit.org_id
              returning ${wallets.orgId} as org_id, ${wallets.balance} as balance_nanos`,
        );
        // Walk each organization's charges in order so every entry's balance_after is exact.
        const running = new Map<string, bigint>();
        for (const row of rowsOf<{ org_id: string; balance_nanos: string }>(updated)) running.set(row.org_id, BigInt(row.balance_nanos) + totals.get(row.org_id)!);
        const entries = charges.map((charge) => {
          const before = running.get(charge.orgId);
          if (before === undefined) throw new Error(`organization ${charge.orgId} has no wallet`);
          running.set(charge.orgId, before - charge.cost);
          return { orgId: charge.orgId, kind: 'charge' as const, amount: -charge.cost, balanceAfter: before - charge.cost, requestId: charge.id };
        });
        await tx.insert(ledgerEntries).values(entries);
      }
      return records.map((r) => firsts.has(r) && isNew.has(r.id));
    });
  }
}

export type ChargeRecord = UsageRecordInput & { cost: bigint };

/** postgres.js returns rows as the result; PGlite wraps them in `{ rows }`. */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? []);
}
