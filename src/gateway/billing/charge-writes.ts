import { sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { ledgerEntries, requestData, usageDaily, usageRecords, wallets } from '../../shared/db/schema.js';
import { rowsOf } from '../../shared/db/rows.js';
import { LOCKED_NOW } from './ledger-entries.js';

// Charges written: usage records, their day's rollup, the wallets' balances and ledger entries, in
// one statement for a batch of records.

export type UsageRecordInput = typeof usageRecords.$inferInsert;

export type ChargeRecord = UsageRecordInput & {
  cost: bigint;
  /** The bodies, for keys with "store request data" on; kept with the usage record. */
  requestData?: { requestBody: string; responseBody: string };
};

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
 * Records usage and charges for many requests in ONE statement whatever the count: one round trip
 * and one commit, which is what lets `ChargeApplier` write a batch of requests at once
 * (`WalletService.chargeMany`). A usage record's id is its request id, so a request written twice
 * inserts nothing and charges nothing the second time. Each charge's ledger entry carries the
 * balance right after it, in request order; each new record is added to its day's rollup
 * (`usage_daily`) in the same statement. Returns, per record, whether it was new.
 *
 * The batch goes as one JSON parameter, so the statement's text is the
 * same for every batch: PostgreSQL and the driver prepare it once per
 * connection, rather than a new statement for each batch size (17
 * parameters a row, which drizzle assembled and PostgreSQL parsed anew).
 */
export async function writeCharges(db: Database, records: ChargeRecord[]): Promise<boolean[]> {
  if (records.length === 0) return [];
  // Within one batch the first record of a request id counts; the others are repeats.
  const seen = new Set<string>();
  const firsts = records.filter((r) => !seen.has(r.id) && seen.add(r.id));
  const result = await db.execute(sql`with input as (
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

/**
 * One record as a row of `writeCharges`' JSON parameter. The cost goes as a
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
