import postgres from 'postgres';
import { monthStart, partitionName } from '../src/gateway/billing/usage-partitions.js';

/**
 * One organization's share of the history: its keys (each with its project, or none) and how many
 * records.
 */
export interface HistoryOrg {
  id: string;
  keys: Array<{ id: string; projectId: string | null }>;
  records: number;
}

/** What `loadHistory` writes: every organization's records spread evenly over [start, end). */
export interface HistoryPlan {
  start: Date;
  end: Date;
  orgs: HistoryOrg[];
}

/**
 * Each organization's top-up, before its first charge: a million USD in nano-units, more than any
 * history spends.
 */
const TOPUP_NANOS = 1_000_000n * 1_000_000_000n;
/** Records written a statement: a window function's sort of them fits in the session's work_mem. */
const CHUNK_RECORDS = 500_000;
/** The bench's prices (`history.ts` sets them through the operator API), nano-units a token. */
export const PRICES = { chatInput: 150, chatOutput: 600, embedInput: 20 } as const;
const TABLES = ['usage_records', 'ledger_entries', 'usage_daily'];

/**
 * Writes a year of history with SQL, as `WalletService.chargeMany` would have written it request by
 * request: each organization's top-up, then per request a usage record and (when it cost anything)
 * a charge in the ledger a few ms later, whose balance_after is the running balance in id order;
 * the daily rollups summed from the records by the charge's own grouping (migration 0022's
 * backfill); each wallet's balance the ledger's sum. Rows go in time order across organizations, a
 * slice of the year at a time, and a ledger entry's id follows its time (its millisecond, then its
 * organization), so tables and indexes are laid out as traffic lays them out. Field values come
 * from a hash of the record's number: 90 % chat, 10 % embeddings, 1 % response-cache hits (free: no
 * ledger entry), streams, cached prompt tokens. The three tables' indexes are dropped and built
 * again after, and foreign keys are not checked row by row (`session_replication_role`): the rows
 * are consistent by construction.
 *
 * @example
 * await loadHistory('postgres://postgres@127.0.0.1/tollgate_bench_history', plan, console.log);
 */
export async function loadHistory(url: string, plan: HistoryPlan, log: (line: string) => void): Promise<void> {
  if (plan.orgs.length > 999) throw new Error('a ledger id holds the organization in its last three digits');
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await sql`set session_replication_role = replica`;
    await sql`set synchronous_commit = off`;
    await sql`set work_mem = '256MB'`;
    await sql`set maintenance_work_mem = '1GB'`;
    await createMonths(sql, plan.start, plan.end);
    const rebuild = await dropIndexes(sql);
    const idBase = new Date(plan.start.getTime() - 2 * 3_600_000);
    const orgs = plan.orgs.map((org, ord) => ({
      ord,
      org_id: org.id,
      seed: ord * 7919 + 17,
      step: (plan.end.getTime() - plan.start.getTime()) / 1000 / org.records,
      nkeys: org.keys.length,
    }));
    const keys = plan.orgs.flatMap((org, org_ord) =>
      org.keys.map((k, ord) => ({ org_ord, ord, key_id: k.id, project_id: k.projectId })),
    );
    const topupAt = new Date(plan.start.getTime() - 3_600_000).toISOString();
    await sql`insert into ledger_entries (id, org_id, kind, amount_nanos, balance_after_nanos, note, created_at)
      select ${ledgerId(sql, idBase, sql`${topupAt}::timestamptz`)}, org_id, 'topup', ${TOPUP_NANOS.toString()},
        ${TOPUP_NANOS.toString()}, 'history bench', ${topupAt}::timestamptz
      from json_to_recordset(${JSON.stringify(orgs)}::text::json) as o(ord int, org_id text)`;
    const balances = plan.orgs.map(() => TOPUP_NANOS);
    const total = plan.orgs.reduce((sum, org) => sum + org.records, 0);
    const slices = Math.max(1, Math.ceil(total / CHUNK_RECORDS));
    const startedAt = performance.now();
    let written = 0;
    for (let slice = 0; slice < slices; slice++) {
      // Each organization's records whose times fall in this slice of the year: [first, last).
      const at = (k: number, records: number) => Math.min(records, Math.round((k / slices) * records));
      const ranges = plan.orgs.map((org, ord) => ({
        ...orgs[ord]!,
        first: at(slice, org.records),
        last: at(slice + 1, org.records),
        opening: balances[ord]!.toString(),
      }));
      const spent = await loadSlice(sql, plan.start, idBase, ranges, keys);
      for (const row of spent) balances[row.ord] = balances[row.ord]! - BigInt(row.cost);
      written += ranges.reduce((sum, r) => sum + r.last - r.first, 0);
      log(`  ${written.toLocaleString('en')} records (${rate(written, startedAt)} a second)`);
    }
    await sql`select setval('ledger_entries_id_seq', (select max(id) from ledger_entries))`;
    log(`  rollups and balances`);
    await sql`insert into usage_daily (org_id, day, key_id, project_id, model_id, batch, requests, cache_hits,
        errors, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cache_hit_tokens, cost_nanos)
      select org_id, (created_at at time zone 'UTC')::date, key_id, project_id, model_id, false, count(*),
        count(*) filter (where cache_hit), count(*) filter (where status >= 400), sum(prompt_tokens),
        sum(completion_tokens), sum(cached_tokens), sum(reasoning_tokens),
        coalesce(sum(prompt_tokens + completion_tokens) filter (where cache_hit), 0), sum(cost_nanos)
      from usage_records group by 1, 2, 3, 4, 5 order by 2, 1, 3, 4, 5`;
    await sql`update wallets w set balance_nanos = s.total, updated_at = now()
      from (select org_id, sum(amount_nanos) as total from ledger_entries group by org_id) s where w.org_id = s.org_id`;
    log(`  indexes`);
    for (const statement of rebuild) await sql.unsafe(statement);
    log(`  vacuum analyze`);
    for (const table of TABLES) await sql.unsafe(`vacuum analyze ${table}`);
  } finally {
    await sql.end();
  }
}

/**
 * A ledger entry's id: the millisecond of its time since `base`, then its organization's number (3
 * digits).
 */
function ledgerId(sql: postgres.Sql, base: Date, at: postgres.PendingQuery<postgres.Row[]>) {
  return sql`floor(extract(epoch from ${at} - ${base.toISOString()}::timestamptz) * 1000)::bigint * 1000 + ord`;
}

interface Range {
  ord: number;
  org_id: string;
  seed: number;
  step: number;
  nkeys: number;
  first: number;
  last: number;
  /** The organization's balance before the slice's first charge. */
  opening: string;
}

/**
 * One slice of the year: every organization's records in it, with their charges, in time order;
 * what each cost.
 */
async function loadSlice(
  sql: postgres.Sql,
  start: Date,
  idBase: Date,
  ranges: Range[],
  keys: Array<{ org_ord: number; ord: number; key_id: string; project_id: string | null }>,
): Promise<Array<{ ord: number; cost: string }>> {
  return sql<Array<{ ord: number; cost: string }>>`with o as (
      select * from json_to_recordset(${JSON.stringify(ranges)}::text::json) as o(ord int, org_id text, seed bigint,
        step float8, nkeys int, first bigint, last bigint, opening bigint)),
    keys as (
      select * from json_to_recordset(${JSON.stringify(keys)}::text::json)
        as k(org_ord int, ord int, key_id text, project_id text)),
    g as (
      select o.ord, o.org_id, o.opening, i, 'req_' || md5(o.seed::text || ':' || i::text) as id,
        ${start.toISOString()}::timestamptz + make_interval(secs => (i + 0.5) * o.step) as at,
        (i * 2654435761 + o.seed) % 4294967296 as r, o.nkeys
      from o cross join lateral generate_series(o.first, o.last - 1) as i),
    f as (
      select g.*, k.key_id, k.project_id, g.r % 10 = 0 as embed, g.r % 100 = 1 as hit
      from g join keys k on k.org_ord = g.ord and k.ord = (g.r / 7) % g.nkeys),
    t as (
      select f.*, (case when embed then 5 + (r / 13) % 500 else 50 + (r / 13) % 2000 end)::int as prompt,
        (case when embed then 0 else 10 + (r / 17) % 800 end)::int as completion,
        (not embed and (r / 23) % 2 = 0) as streamed
      from f),
    c as (
      select t.*, (case when not embed and (r / 19) % 4 = 0 then prompt / 2 else 0 end)::int as cached,
        (case when hit then 0 when embed then prompt * ${PRICES.embedInput}::bigint
          else prompt * ${PRICES.chatInput}::bigint + completion * ${PRICES.chatOutput}::bigint end) as cost
      from t),
    s as (select c.*, sum(cost) over (partition by ord order by i) as spent from c),
    u as (
      insert into usage_records (id, org_id, key_id, project_id, model_id, endpoint, prompt_tokens, completion_tokens,
        cached_tokens, reasoning_tokens, cost_nanos, status, streamed, usage_source, latency_ms, ttft_ms, cache_hit,
        created_at)
      select id, org_id, key_id, project_id, case when embed then 'sim-embed' else 'sim-chat' end,
        case when embed then 'embeddings' else 'chat.completions' end, prompt, completion, cached, 0, cost, 200,
        streamed, case when streamed and r % 250 = 7 then 'estimated' else 'upstream' end, 100 + (r / 29) % 3000,
        case when streamed then 50 + (r / 31) % 500 end, hit, at
      from s order by at, ord
      returning 1),
    l as (
      insert into ledger_entries (id, org_id, kind, amount_nanos, balance_after_nanos, request_id, created_at)
      select ${ledgerId(sql, idBase, sql`at + interval '3 milliseconds'`)}, org_id, 'charge', -cost,
        opening - spent, id, at + interval '3 milliseconds'
      from s where cost <> 0 order by at, ord
      returning 1)
    select ord, sum(cost)::text as cost, (select count(*) from u) as records, (select count(*) from l) as charges
    from c group by ord`;
}

/**
 * The usage records' month partitions the history falls in (migration 0025 made those from this
 * month on; the gateway's own maintenance makes only the months ahead), so no record goes to the
 * default partition.
 */
async function createMonths(sql: postgres.Sql, start: Date, end: Date): Promise<void> {
  for (let month = monthStart(start); month < end; month = monthStart(month, 1))
    await sql.unsafe(
      `create table if not exists ${partitionName(month)} partition of usage_records
        for values from ('${month.toISOString()}') to ('${monthStart(month, 1).toISOString()}')`,
    );
}

/**
 * Drops the three tables' indexes and unique constraints (and the foreign keys that lean on them)
 * and returns the statements that make them again, as the migrations made them.
 */
async function dropIndexes(sql: postgres.Sql): Promise<string[]> {
  const constraints = await sql<Array<{ table: string; name: string; def: string; type: string }>>`
    select conrelid::regclass::text as table, conname as name, pg_get_constraintdef(oid) as def, contype as type
    from pg_constraint
    where (conrelid::regclass::text = any(${TABLES}) and contype in ('p', 'u'))
      or (confrelid::regclass::text = any(${TABLES}) and contype = 'f')
    order by contype = 'f' desc`;
  const indexes = await sql<Array<{ name: string; def: string }>>`
    select indexname as name, indexdef as def from pg_indexes
    where schemaname = 'public' and tablename = any(${TABLES})
      and indexname not in (select conname from pg_constraint where contype in ('p', 'u'))`;
  for (const c of constraints) await sql.unsafe(`alter table ${c.table} drop constraint "${c.name}"`);
  for (const index of indexes) await sql.unsafe(`drop index "${index.name}"`);
  const keys = constraints.filter((c) => c.type !== 'f');
  const foreign = constraints.filter((c) => c.type === 'f');
  return [
    ...keys.map((c) => `alter table ${c.table} add constraint "${c.name}" ${c.def}`),
    // A partitioned table's index reads `on only`: made that way it would cover none of the
    // partitions.
    ...indexes.map((index) => index.def.replace(' ON ONLY ', ' ON ')),
    ...foreign.map((c) => `alter table ${c.table} add constraint "${c.name}" ${c.def}`),
  ];
}

function rate(count: number, since: number): string {
  return Math.round(count / ((performance.now() - since) / 1000)).toLocaleString('en');
}

/**
 * Sizes of the tables a history fills, each with its indexes and TOAST (`pg_total_relation_size`),
 * and rows.
 *
 * @example
 * const sizes = await tableSizes(url); // [{ table: 'usage_records', rows: 1000000, bytes: 412000000 }, ...]
 */
export async function tableSizes(url: string): Promise<Array<{ table: string; rows: number; bytes: number }>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const sizes = [];
    for (const table of TABLES) {
      const [row] = await sql.unsafe(
        // A partitioned table's size is its partitions'.
        `select count(*)::text as rows, greatest(pg_total_relation_size('${table}'),
          (select coalesce(sum(pg_total_relation_size(relid)), 0) from pg_partition_tree('${table}')))::text as bytes
          from ${table}`,
      );
      sizes.push({ table, rows: Number(row!.rows), bytes: Number(row!.bytes) });
    }
    return sizes;
  } finally {
    await sql.end();
  }
}
