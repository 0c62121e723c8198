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

  /**
   * Records a request's usage and charges its cost, in one transaction. The
   * usage record's id is the request id: a second write of the same request
   * inserts nothing and charges nothing. Returns false for such a duplicate.
   */
  async charge(record: UsageRecordInput & { cost: bigint }): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const inserted = await tx.insert(usageRecords).values(record).onConflictDoNothing({ target: usageRecords.id }).returning({ id: usageRecords.id });
      if (inserted.length === 0) return false;
      if (record.cost === 0n) return true;
      const [row] = await tx
        .update(wallets)
        .set({ balance: sql`${wallets.balance} - ${record.cost}`, updatedAt: new Date() })
        .where(eq(wallets.orgId, record.orgId))
        .returning({ balance: wallets.balance });
      if (!row) throw new Error(`organization ${record.orgId} has no wallet`);
      await tx.insert(ledgerEntries).values({ orgId: record.orgId, kind: 'charge', amount: -record.cost, balanceAfter: row.balance, requestId: record.id });
      return true;
    });
  }
}
