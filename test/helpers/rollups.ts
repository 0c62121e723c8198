import { sql, type SQL } from 'drizzle-orm';
import type { Database } from '../../src/shared/db/client.js';

// The usage records summed as the rollup sums them, and the rollup itself, each as sorted text
// lines: equal to the nano-unit or not at all.
export const FROM_RECORDS = sql`select org_id, to_char((created_at at time zone 'UTC')::date, 'YYYY-MM-DD') as day, key_id,
    coalesce(project_id, '-') as project_id, model_id, count(*)::text as requests,
    (count(*) filter (where cache_hit))::text as cache_hits, (count(*) filter (where status >= 400))::text as errors,
    sum(prompt_tokens)::text as prompt, sum(completion_tokens)::text as completion, sum(cached_tokens)::text as cached,
    sum(reasoning_tokens)::text as reasoning,
    coalesce(sum(prompt_tokens + completion_tokens) filter (where cache_hit), 0)::text as cache_hit_tokens,
    sum(cost_nanos)::text as cost
  from usage_records group by 1, 2, 3, 4, 5`;
export const FROM_ROLLUPS = sql`select org_id, to_char(day, 'YYYY-MM-DD') as day, key_id, coalesce(project_id, '-') as project_id,
    model_id, requests::text, cache_hits::text, errors::text, prompt_tokens::text as prompt,
    completion_tokens::text as completion, cached_tokens::text as cached, reasoning_tokens::text as reasoning,
    cache_hit_tokens::text, cost_nanos::text as cost
  from usage_daily`;

/**
 * The rows of `FROM_RECORDS` or `FROM_ROLLUPS`, each a line of text, sorted: two lists equal only
 * when every sum is.
 *
 * @example
 * expect(await rollupLines(db, FROM_ROLLUPS)).toEqual(await rollupLines(db, FROM_RECORDS));
 */
export async function rollupLines(db: Database, query: SQL): Promise<string[]> {
  const result = await db.execute(query);
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, string>[];
  const columns = ['org_id', 'day', 'key_id', 'project_id', 'model_id', 'requests', 'cache_hits', 'errors', 'prompt'];
  columns.push('completion', 'cached', 'reasoning', 'cache_hit_tokens', 'cost');
  return rows.map((row) => columns.map((column) => row[column]).join(' ')).sort();
}
