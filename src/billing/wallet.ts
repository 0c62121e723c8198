import { desc, eq, sql } from 'drizzle-orm';
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

  /** Pushes the expiry of these requests' holds to one lease from now (see `hold-leases.ts`). */
  async renewHolds(requestIds: string[], leaseMs: number): Promise<void> {
    if (requestIds.length === 0) return;
    await this.db.execute(
      sql`update ${walletHolds} set expires_at = now() + ${`${leaseMs} milliseconds`}::interval
          where request_id in (${sql.join(requestIds.map((id) => sql`${id}`), sql`, `)})`,
    );
  }

  /**
   * Gives back the holds of requests that never settled (their gateway died,
   * so nothing renewed them) once they expire. Returns how many organizations it swept.
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
   * Records usage and charges for many requests, and lets go of their holds
   * (and of the holds of `releases`: requests that ended without using
   * anything), in ONE statement whatever the count: one round trip and one
   * commit, which is what lets `ChargeWriter` group concurrent requests into
   * one write. A usage record's id is its request id, so a request written
   * twice inserts nothing and charges nothing the second time. Each charge's
   * ledger entry carries the balance right after it, in request order.
   * Returns, per record, whether it was new.
   */
  async chargeMany(records: ChargeRecord[], releases: string[] = []): Promise<boolean[]> {
    if (records.length === 0 && releases.length === 0) return [];
    // Within one batch the first record of a request id counts; the others are repeats.
    const seen = new Set<string>();
    const firsts = records.filter((r) => !seen.has(r.id) && seen.add(r.id));
    const holdIds = sql.join([...seen, ...releases].map((id) => sql`${id}`), sql`, `);
    if (firsts.length === 0) {
      await this.db.execute(sql`with released as (
          delete from ${walletHolds} where request_id in (${holdIds}) returning org_id, amount_nanos),
        unheld as (select org_id, sum(amount_nanos)::bigint as total from released group by org_id)
        update ${wallets} set reserved_nanos = ${wallets.reserved} - unheld.total, updated_at = now()
        from unheld where ${wallets.orgId} = unheld.org_id`);
      return records.map(() => false);
    }
    const rows = sql.join(
      firsts.map(
        (r, ord) => sql`(${ord}::int, ${r.id}::text, ${r.orgId}::text, ${r.keyId}::text, ${r.projectId ?? null}::text, ${r.modelId}::text,
          ${r.endpoint}::text, ${r.promptTokens}::int, ${r.completionTokens}::int, ${r.cost}::bigint, ${r.status}::int, ${r.streamed}::boolean,
          ${r.usageSource}::text, ${r.latencyMs}::int, ${r.ttftMs ?? null}::int, ${r.cacheHit ?? false}::boolean, ${(r.createdAt ?? new Date()).toISOString()}::timestamptz)`,
      ),
      sql`, `,
    );
    const withBodies = firsts.filter((r) => r.requestData);
    const bodies = withBodies.length
      ? sql`, bodies as (
          insert into ${requestData} (request_id, request_body, response_body)
          select b.id, b.request_body, b.response_body
          from (values ${sql.join(withBodies.map((r) => sql`(${r.id}::text, ${r.requestData!.requestBody}::text, ${r.requestData!.responseBody}::text)`), sql`, `)})
            as b(id, request_body, response_body)
          join new_usage n on n.id = b.id
          returning request_id)`
      : sql``;
    const result = await this.db.execute(sql`with input (ord, id, org_id, key_id, project_id, model_id, endpoint, prompt_tokens, completion_tokens,
          cost_nanos, status, streamed, usage_source, latency_ms, ttft_ms, cache_hit, created_at) as (values ${rows}),
      new_usage as (
        insert into ${usageRecords} (id, org_id, key_id, project_id, model_id, endpoint, prompt_tokens, completion_tokens,
          cost_nanos, status, streamed, usage_source, latency_ms, ttft_ms, cache_hit, created_at)
        select id, org_id, key_id, project_id, model_id, endpoint, prompt_tokens, completion_tokens,
          cost_nanos, status, streamed, usage_source, latency_ms, ttft_ms, cache_hit, created_at from input
        on conflict (id) do nothing
        returning id, org_id, cost_nanos),
      released as (
        delete from ${walletHolds} where request_id in (${holdIds}) returning org_id, amount_nanos),
      debits as (
        select org_id, sum(cost)::bigint as cost, sum(unheld)::bigint as unheld from (
          select org_id, cost_nanos as cost, 0::bigint as unheld from new_usage
          union all select org_id, 0::bigint, amount_nanos from released) as parts
        group by org_id),
      updated as (
        update ${wallets} set balance_nanos = ${wallets.balance} - debits.cost, reserved_nanos = ${wallets.reserved} - debits.unheld, updated_at = now()
        from debits where ${wallets.orgId} = debits.org_id
        returning ${wallets.orgId} as org_id, ${wallets.balance} as balance_nanos),
      charged as (
        select i.ord, n.id, n.org_id, n.cost_nanos from new_usage n join input i on i.id = n.id where n.cost_nanos <> 0),
      ledger as (
        insert into ${ledgerEntries} (org_id, kind, amount_nanos, balance_after_nanos, request_id)
        select c.org_id, 'charge', -c.cost_nanos,
          -- the balance right after this charge: the final balance plus the charges that follow it
          u.balance_nanos + coalesce(sum(c.cost_nanos) over (partition by c.org_id order by c.ord rows between 1 following and unbounded following), 0),
          c.id
        from charged c join updated u on u.org_id = c.org_id
        order by c.ord
        returning id)
      ${bodies}
      select id from new_usage`);
    const isNew = new Set(rowsOf<{ id: string }>(result).map((row) => row.id));
    const firstOf = new Set(firsts);
    return records.map((r) => firstOf.has(r) && isNew.has(r.id));
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
