import { and, desc, eq, gte, inArray, lt, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import {
  ledgerEntries,
  type LedgerKind,
  requestData,
  usageDaily,
  usageRecords,
  wallets,
} from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { rowsOf } from '../../shared/db/rows.js';

export type LedgerEntry = typeof ledgerEntries.$inferSelect;
export type UsageRecordInput = typeof usageRecords.$inferInsert;

/**
 * A ledger entry's time: the clock when it is written, which is after its wallet's row is locked,
 * not the transaction's start (`now()`, the column's default). Entries are made in the order of
 * that lock (their ids, and each one's balance after it), so their times follow it too, and a
 * window of the ledger by time is a run of it: one window closes at the balance the next opens with
 * (`ledger-export.ts`).
 */
const LOCKED_NOW = sql`clock_timestamp()`;

/**
 * The rollup's part of `chargeMany`: the day's sums of the usage records the statement inserted
 * (`new_usage`), and only those, so a charge replayed from the journal adds nothing; upserted in
 * key order, so two gateways' batches lock the same rows in the same order.
 */
const ROLLUP_UPSERT = sql`
        insert into ${usageDaily} (org_id, day, key_id, project_id, model_id, batch, requests, cache_hits, errors,
          prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cache_hit_tokens, cost_nanos)
        select org_id, (created_at at time zone 'UTC')::date, key_id, project_id, model_id, batch_id is not null, count(*),
          count(*) filter (where cache_hit), count(*) filter (where status >= 400), sum(prompt_tokens),
          sum(completion_tokens), sum(cached_tokens), sum(reasoning_tokens),
          coalesce(sum(prompt_tokens + completion_tokens) filter (where cache_hit), 0), sum(cost_nanos)
        from new_usage group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6
        on conflict (org_id, day, key_id, project_id, model_id, batch) do update set
          requests = usage_daily.requests + excluded.requests,
          cache_hits = usage_daily.cache_hits + excluded.cache_hits,
          errors = usage_daily.errors + excluded.errors,
          prompt_tokens = usage_daily.prompt_tokens + excluded.prompt_tokens,
          completion_tokens = usage_daily.completion_tokens + excluded.completion_tokens,
          cached_tokens = usage_daily.cached_tokens + excluded.cached_tokens,
          reasoning_tokens = usage_daily.reasoning_tokens + excluded.reasoning_tokens,
          cache_hit_tokens = usage_daily.cache_hit_tokens + excluded.cache_hit_tokens,
          cost_nanos = usage_daily.cost_nanos + excluded.cost_nanos
        returning 1`;

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
    return this.db
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
  async ledgerPage(
    orgId: string,
    {
      limit,
      before,
      keyId,
      kind,
      from,
      to,
    }: { limit: number; before?: number; keyId?: string; kind?: LedgerKind; from?: Date; to?: Date },
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
          this.db
            .select({ id: usageRecords.id })
            .from(usageRecords)
            .where(and(eq(usageRecords.orgId, orgId), eq(usageRecords.keyId, keyId))),
        ),
      );
    const rows = await this.db
      .select()
      .from(ledgerEntries)
      .where(and(...conditions))
      .orderBy(desc(ledgerEntries.id))
      .limit(limit + 1);
    const entries = rows.slice(0, limit);
    return { entries, next: rows.length > limit ? entries.at(-1)!.id : null };
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
   * Records usage and charges for many requests in ONE statement whatever
   * the count: one round trip and one commit, which is what lets
   * `ChargeApplier` write a batch of requests at once. A usage record's id is
   * its request id, so a request written twice inserts nothing and charges
   * nothing the second time. Each charge's ledger entry carries the balance
   * right after it, in request order; each new record is added to its day's
   * rollup (`usage_daily`) in the same statement. Returns, per record, whether it was new.
   *
   * The batch goes as one JSON parameter, so the statement's text is the
   * same for every batch: PostgreSQL and the driver prepare it once per
   * connection, rather than a new statement for each batch size (17
   * parameters a row, which drizzle assembled and PostgreSQL parsed anew).
   */
  async chargeMany(records: ChargeRecord[]): Promise<boolean[]> {
    if (records.length === 0) return [];
    // Within one batch the first record of a request id counts; the others are repeats.
    const seen = new Set<string>();
    const firsts = records.filter((r) => !seen.has(r.id) && seen.add(r.id));
    const result = await this.db.execute(sql`with input as (
        select * from json_to_recordset(${JSON.stringify(firsts.map(chargeRow))}::json) as r(ord int, id text, org_id text, key_id text,
          project_id text, model_id text, endpoint text, prompt_tokens int, completion_tokens int, cached_tokens int,
          reasoning_tokens int, cost_nanos bigint, status int,
          streamed boolean, usage_source text, latency_ms int, ttft_ms int, cache_hit boolean, created_at timestamptz,
          request_body text, response_body text, batch_id text)),
      new_usage as (
        insert into ${usageRecords} (id, org_id, key_id, project_id, model_id, endpoint, prompt_tokens, completion_tokens,
          cached_tokens, reasoning_tokens, cost_nanos, status, streamed, usage_source, latency_ms, ttft_ms, cache_hit, created_at,
          batch_id)
        select id, org_id, key_id, project_id, model_id, endpoint, prompt_tokens, completion_tokens,
          cached_tokens, reasoning_tokens, cost_nanos, status, streamed, usage_source, latency_ms, ttft_ms, cache_hit, created_at,
          batch_id
        from input i
        -- The key is (id, created_at) (partitioned by month): a repeat dated otherwise is found by its id alone,
        -- a probe of each month's index per record (a subquery with a limit: never an anti-join over the table).
        where (select 1 from ${usageRecords} u where u.id = i.id limit 1) is null
        on conflict (id, created_at) do nothing
        returning id, org_id, key_id, project_id, model_id, prompt_tokens, completion_tokens, cached_tokens,
          reasoning_tokens, cost_nanos, status, cache_hit, created_at, batch_id),
      rollup as (${ROLLUP_UPSERT}),
      debits as (select org_id, sum(cost_nanos)::bigint as cost from new_usage group by org_id),
      updated as (
        update ${wallets} set balance_nanos = ${wallets.balance} - debits.cost, updated_at = now()
        from debits where ${wallets.orgId} = debits.org_id and debits.cost <> 0
        returning ${wallets.orgId} as org_id, ${wallets.balance} as balance_nanos),
      charged as (
        select i.ord, n.id, n.org_id, n.cost_nanos from new_usage n join input i on i.id = n.id where n.cost_nanos <> 0),
      ledger as (
        insert into ${ledgerEntries} (org_id, kind, amount_nanos, balance_after_nanos, request_id, created_at)
        select c.org_id, 'charge', -c.cost_nanos,
          -- the balance right after this charge: the final balance plus the charges that follow it
          u.balance_nanos + coalesce(sum(c.cost_nanos) over (partition by c.org_id order by c.ord rows between 1 following and unbounded following), 0),
          c.id, ${LOCKED_NOW}
        from charged c join updated u on u.org_id = c.org_id
        order by c.ord
        returning id),
      bodies as (
        insert into ${requestData} (request_id, request_body, response_body)
        select i.id, i.request_body, i.response_body
        from input i join new_usage n on n.id = i.id
        where i.request_body is not null
        returning request_id)
      select id from new_usage`);
    const isNew = new Set(rowsOf<{ id: string }>(result).map((row) => row.id));
    const firstOf = new Set(firsts);
    return records.map((r) => firstOf.has(r) && isNew.has(r.id));
  }
}

/**
 * One record as a row of `chargeMany`'s JSON parameter. The cost goes as a
 * string (JSON has no 64-bit integers; PostgreSQL reads it as bigint exactly),
 * and the time as ISO text.
 */
function chargeRow(r: ChargeRecord, ord: number) {
  return {
    ord,
    id: r.id,
    org_id: r.orgId,
    key_id: r.keyId,
    project_id: r.projectId ?? null,
    model_id: r.modelId,
    endpoint: r.endpoint,
    prompt_tokens: r.promptTokens,
    completion_tokens: r.completionTokens,
    // A journal line written before these counts existed has none.
    cached_tokens: r.cachedTokens ?? 0,
    reasoning_tokens: r.reasoningTokens ?? 0,
    cost_nanos: r.cost.toString(),
    status: r.status,
    streamed: r.streamed,
    usage_source: r.usageSource,
    latency_ms: r.latencyMs,
    ttft_ms: r.ttftMs ?? null,
    cache_hit: r.cacheHit ?? false,
    created_at: (r.createdAt ?? new Date()).toISOString(),
    request_body: r.requestData?.requestBody ?? null,
    response_body: r.requestData?.responseBody ?? null,
    batch_id: r.batchId ?? null,
  };
}

export type ChargeRecord = UsageRecordInput & {
  cost: bigint;
  /** The bodies, for keys with "store request data" on; kept with the usage record. */
  requestData?: { requestBody: string; responseBody: string };
};

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
