import { eq, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerEntries, type LedgerKind, usageRecords, wallets } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { rowsOf } from '../../shared/db/rows.js';
import { type ChargeRecord, writeCharges } from './charge-writes.js';
import { type LedgerEntry, ledgerPage, type LedgerPageOptions, LOCKED_NOW, recentLedger } from './ledger-entries.js';

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
  constructor(
    private readonly db: Database,
    /**
     * Told of every committed top-up and adjustment, so the request path's spendable amount follows
     * (`admission/gate-keeper.ts`).
     */
    private readonly credited: (orgId: string, amount: bigint) => Promise<void> = async () => {},
  ) {}

  async balance(orgId: string): Promise<bigint> {
    const [row] = await this.db.select({ balance: wallets.balance }).from(wallets).where(eq(wallets.orgId, orgId));
    if (!row) throw new GatewayError('not_found', `Organization ${orgId} has no wallet.`, { status: 404 });
    return row.balance;
  }

  /** Adds a signed amount (top-ups positive; adjustments either way) and returns the new balance. */
  async credit(orgId: string, kind: Exclude<LedgerKind, 'charge'>, amount: bigint, note?: string): Promise<bigint> {
    const balance = await this.db.transaction(async (tx) => {
      const [row] = await tx
        .update(wallets)
        .set({ balance: sql`${wallets.balance} + ${amount}`, updatedAt: new Date() })
        .where(eq(wallets.orgId, orgId))
        .returning({ balance: wallets.balance });
      if (!row) throw new GatewayError('not_found', `Organization ${orgId} does not exist.`, { status: 404 });
      await tx
        .insert(ledgerEntries)
        .values({ orgId, kind, amount, balanceAfter: row.balance, note: note ?? null, createdAt: LOCKED_NOW });
      return row.balance;
    });
    await this.credited(orgId, amount);
    return balance;
  }

  ledger(orgId: string, limit = 100): Promise<LedgerEntry[]> {
    return recentLedger(this.db, orgId, limit);
  }

  /** One page of the ledger, newest first (`ledger-entries.ts`'s `ledgerPage`). */
  ledgerPage(orgId: string, options: LedgerPageOptions): Promise<{ entries: LedgerEntry[]; next: number | null }> {
    return ledgerPage(this.db, orgId, options);
  }

  /**
   * What rebuilding an organization's spendable amount needs, read in one
   * statement (one snapshot): its balance, and which of `requestIds` (charges
   * a gateway has made but maybe not yet written) the balance already holds.
   */
  async walletSnapshot(orgId: string, requestIds: string[]): Promise<{ balance: bigint; written: Set<string> }> {
    const ids = requestIds.length
      ? sql`array[${sql.join(
          requestIds.map((id) => sql`${id}`),
          sql`, `,
        )}]::text[]`
      : sql`array[]::text[]`;
    const result = await this.db.execute(
      sql`select ${wallets.balance}::text as balance,
            coalesce((select array_agg(id) from ${usageRecords} where id = any(${ids})), array[]::text[]) as written
          from ${wallets} where ${wallets.orgId} = ${orgId}`,
    );
    const [row] = rowsOf<{ balance: string; written: string[] | string }>(result);
    if (!row) throw new GatewayError('not_found', `Organization ${orgId} has no wallet.`, { status: 404 });
    return { balance: BigInt(row.balance), written: new Set(parseTextArray(row.written)) };
  }

  /** Records one request's usage and charges it; false when that request was already recorded. */
  async charge(record: ChargeRecord): Promise<boolean> {
    const [inserted] = await this.chargeMany([record]);
    return inserted!;
  }

  /**
   * Records usage and charges for many requests in one statement (`charge-writes.ts`); per record,
   * whether it was new.
   */
  chargeMany(records: ChargeRecord[]): Promise<boolean[]> {
    return writeCharges(this.db, records);
  }
}

/**
 * A text[] as PGlite (an array, or its `{a,b}` text form) or postgres.js (its text form: the store
 * reads no array types, see `openStore`) returns it. The ids are the gateway's own: no comma or
 * quote.
 */
function parseTextArray(value: string[] | string): string[] {
  if (Array.isArray(value)) return value;
  const inner = value.replace(/^\{|\}$/g, '');
  return inner ? inner.split(',').map((item) => item.replace(/^"|"$/g, '')) : [];
}
