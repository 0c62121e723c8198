import { type SQL, sql } from 'drizzle-orm';

/**
 * What a usage report sums, as one subquery `u` with a row per rollup (or per record) and the same
 * columns either way: org_id, day (`YYYY-MM-DD`, UTC), key_id, project_id, model_id, requests,
 * cache_hits, errors, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens,
 * cache_hit_tokens, cost_nanos.
 *
 * The whole UTC days of the window come from the daily rollups (`usage_daily`), so a year costs 365
 * rows a group, not a year of requests. A window that starts or ends inside a day (the summary's
 * default ends now; the overview's last hour) takes those partial days from the usage records
 * themselves: at most a day at each edge, read on the (org_id, created_at) index, so their cost is
 * bounded by a day's traffic, not the history's.
 */

/**
 * Which records a report covers: one organization (every one: null, the operator's view), `from <=
 * created_at < to`, optionally narrowed.
 */
export interface UsageScope {
  orgId: string | null;
  from: Date;
  to: Date;
  keyId?: string;
  projectId?: string;
  /** The catalog id the usage was recorded under. */
  model?: string;
}

const DAY_MS = 86_400_000;
const dayText = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The subquery of a scope's rows, aliased `u`. */
export function usageSource(scope: UsageScope): SQL {
  const from = scope.from.getTime();
  const to = scope.to.getTime();
  const firstWhole = Math.ceil(from / DAY_MS) * DAY_MS;
  const endWhole = Math.floor(to / DAY_MS) * DAY_MS;
  const parts: SQL[] = [];
  const edges: Array<[number, number]> = [];
  if (firstWhole < endWhole) {
    parts.push(rollupRows(scope, dayText(firstWhole), dayText(endWhole)));
    if (from < firstWhole) edges.push([from, firstWhole]);
    if (endWhole < to) edges.push([endWhole, to]);
  } else {
    edges.push([from, to]);
  }
  if (edges.length > 0) parts.push(recordRows(scope, edges));
  return sql`(${sql.join(parts, sql` union all `)}) as u`;
}

function rollupRows(scope: UsageScope, fromDay: string, toDay: string): SQL {
  return sql`select org_id, to_char(day, 'YYYY-MM-DD') as day, key_id, project_id, model_id, requests, cache_hits,
      errors, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, cache_hit_tokens, cost_nanos
    from usage_daily
    where day >= ${fromDay}::date and day < ${toDay}::date${narrowing(scope)}`;
}

function recordRows(scope: UsageScope, edges: Array<[number, number]>): SQL {
  const windows = edges.map(
    ([from, to]) =>
      sql`(created_at >= ${new Date(from).toISOString()}::timestamptz and created_at < ${new Date(to).toISOString()}::timestamptz)`,
  );
  return sql`select org_id, to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, key_id, project_id,
      model_id, 1::bigint as requests, (case when cache_hit then 1 else 0 end)::bigint as cache_hits,
      (case when status >= 400 then 1 else 0 end)::bigint as errors, prompt_tokens::bigint, completion_tokens::bigint,
      cached_tokens::bigint, reasoning_tokens::bigint,
      (case when cache_hit then prompt_tokens + completion_tokens else 0 end)::bigint as cache_hit_tokens, cost_nanos
    from usage_records
    where (${sql.join(windows, sql` or `)})${narrowing(scope)}`;
}

/**
 * The scope's organization, key, project and model, as conditions on either table (the same column
 * names).
 */
function narrowing({ orgId, keyId, projectId, model }: UsageScope): SQL {
  const conditions: SQL[] = [];
  if (orgId !== null) conditions.push(sql` and org_id = ${orgId}`);
  if (keyId !== undefined) conditions.push(sql` and key_id = ${keyId}`);
  if (projectId !== undefined) conditions.push(sql` and project_id = ${projectId}`);
  if (model !== undefined) conditions.push(sql` and model_id = ${model}`);
  return sql.join(conditions);
}

/** The sums every report shows, as text (tokens and money never pass through a float), over `u`. */
export const TOTALS_SELECT = sql`coalesce(sum(u.requests), 0)::text as requests,
  coalesce(sum(u.cache_hits), 0)::text as "cacheHits",
  coalesce(sum(u.prompt_tokens), 0)::text as "promptTokens",
  coalesce(sum(u.completion_tokens), 0)::text as "completionTokens",
  coalesce(sum(u.cached_tokens), 0)::text as "cachedTokens",
  coalesce(sum(u.reasoning_tokens), 0)::text as "reasoningTokens",
  coalesce(sum(u.cost_nanos), 0)::text as cost`;
