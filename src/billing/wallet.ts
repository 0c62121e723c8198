import { desc, eq, inArray, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { ledgerEntries, type LedgerKind, requestData, usageRecords, walletHolds, wallets } from '../db/schema.js';
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
   * Puts a hold of `amount` on the organization's wallet for one request, if
   * its available balance (balance less the holds of requests in flight) is
   * above zero. One statement, so concurrent requests cannot all pass on the
   * same money. Returns false when the wallet has nothing available.
   */
  async hold(orgId: string, requestId: string, amount: bigint, ttlMs: number): Promise<boolean> {
    const result = await this.db.execute(
      sql`with held as (
            update ${wallets} set reserved_nanos = ${wallets.reserved} + ${amount}::bigint, updated_at = now()
            where ${wallets.orgId} = ${orgId} and ${wallets.balance} - ${wallets.reserved} > 0
            returning ${wallets.orgId} as org_id)
          insert into ${walletHolds} (request_id, org_id, amount_nanos, expires_at)
          select ${requestId}, org_id, ${amount}::bigint, now() + ${`${ttlMs} milliseconds`}::interval from held
          returning request_id`,
    );
    return rowsOf(result).length === 1;
  }

  /**
   * Gives back the holds of requests that never settled (their gateway died)
   * once they expire. Returns how many it swept.
   */
  async sweepExpiredHolds(): Promise<number> {
    const result = await this.db.execute(
      sql`with expired as (
            delete from ${walletHolds} where ${walletHolds.expiresAt} < now() returning org_id, amount_nanos),
          totals as (select org_id, sum(amount_nanos)::bigint as total from expired group by org_id)
          update ${wallets} set reserved_nanos = ${wallets.reserved} - totals.total, updated_at = now()
          from totals where ${wallets.orgId} = totals.org_id
          returning totals.total`,
    );
    return rowsOf(result).length;
  }

  /** Records one request's usage and charges it; false when that request was already recorded. */
  async charge(record: ChargeRecord): Promise<boolean> {
    const [inserted] = await this.chargeMany([record]);
    return inserted!;
  }

  /**
   * Records usage and charges for many requests in one transaction, and lets
   * go of their holds (and of the holds of `releases`: requests that ended
   * without using anything): four statements whatever the count, which is
   * what lets `ChargeWriter` group concurrent requests into one commit. A usage
   * record's id is its request id, so a request written twice inserts nothing
   * and charges nothing the second time. Returns, per record, whether it was new.
   */
  async chargeMany(records: ChargeRecord[], releases: string[] = []): Promise<boolean[]> {
    if (records.length === 0 && releases.length === 0) return [];
    // Within one batch the first record of a request id counts; the others are repeats.
    const seen = new Set<string>();
    const firsts = new Set(records.filter((r) => !seen.has(r.id) && seen.add(r.id)));
    return this.db.transaction(async (tx) => {
      const inserted = firsts.size
        ? await tx
            .insert(usageRecords)
            .values([...firsts].map(({ requestData: _, ...row }) => row))
            .onConflictDoNothing({ target: usageRecords.id })
            .returning({ id: usageRecords.id })
        : [];
      const isNew = new Set(inserted.map((row) => row.id));
      const bodies = [...firsts].flatMap((r) => (isNew.has(r.id) && r.requestData ? [{ requestId: r.id, ...r.requestData }] : []));
      if (bodies.length > 0) await tx.insert(requestData).values(bodies);
      const charges = [...firsts].filter((r) => isNew.has(r.id) && r.cost !== 0n);
      const holdIds = [...seen, ...releases];
      const released = holdIds.length
        ? await tx.delete(walletHolds).where(inArray(walletHolds.requestId, holdIds)).returning({ orgId: walletHolds.orgId, amount: walletHolds.amount })
        : [];

      const debits = new Map<string, { cost: bigint; unheld: bigint }>();
      const entry = (orgId: string) => debits.get(orgId) ?? debits.set(orgId, { cost: 0n, unheld: 0n }).get(orgId)!;
      for (const charge of charges) entry(charge.orgId).cost += charge.cost;
      for (const hold of released) entry(hold.orgId).unheld += hold.amount;
      if (debits.size === 0) return records.map((r) => firsts.has(r) && isNew.has(r.id));

      const rows = sql.join([...debits].map(([orgId, d]) => sql`(${orgId}, ${d.cost}::bigint, ${d.unheld}::bigint)`), sql`, `);
      const updated = await tx.execute(
        sql`update ${wallets} set balance_nanos = ${wallets.balance} - d.cost, reserved_nanos = ${wallets.reserved} - d.unheld, updated_at = now()
            from (values ${rows}) as d(org_id, cost, unheld)
            where ${wallets.orgId} = d.org_id
            returning ${wallets.orgId} as org_id, ${wallets.balance} as balance_nanos`,
      );
      if (charges.length > 0) {
        // Walk each organization's charges in order so every entry's balance_after is exact.
        const running = new Map<string, bigint>();
        for (const row of rowsOf<{ org_id: string; balance_nanos: string }>(updated)) {
          running.set(row.org_id, BigInt(row.balance_nanos) + debits.get(row.org_id)!.cost);
        }
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

export type ChargeRecord = UsageRecordInput & {
  cost: bigint;
  /** The bodies, for keys with "store request data" on; kept with the usage record. */
  requestData?: { requestBody: string; responseBody: string };
};

/** postgres.js returns rows as the result; PGlite wraps them in `{ rows }`. */
function rowsOf<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? []);
}
