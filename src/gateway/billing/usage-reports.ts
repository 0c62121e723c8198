import { eq, type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { isStatementTimeout } from '../../shared/db/errors.js';
import { GatewayError } from '../../shared/http/errors.js';
import { apiKeys } from '../../shared/db/schema.js';
import { rowsOf } from '../../shared/db/rows.js';
import { type UsageCursor, usageRequests } from './usage-requests.js';
import { TOTALS_SELECT, type UsageScope, usageSource } from './usage-source.js';

// Usage reports of one organization (or every one). The sums read the daily rollups
// (`usage-source.ts`: the window's whole days from `usage_daily`, its partial days from the usage
// records), never the history's requests; only the list of requests (`usage-requests.ts`) reads the
// records, a page at a time. Every sum is taken in SQL and read back as text, so token counts and
// money (bigint nanos) never pass through a float.

export type { UsageScope } from './usage-source.js';

export interface UsageTotals {
  requests: number;
  cacheHits: number;
  promptTokens: number;
  completionTokens: number;
  /**
   * Of the prompt tokens, those read from the engine's prefix cache (billed at the cached-input
   * price).
   */
  cachedTokens: number;
  /** Of the completion tokens, the reasoning's. */
  reasoningTokens: number;
  /** nanos */
  cost: bigint;
}

export const USAGE_GROUPINGS = ['model', 'key', 'key_model', 'project', 'day'] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

export type UsageGroup = UsageTotals &
  (
    | { by: 'model'; model: string }
    | { by: 'key'; keyId: string; keyName: string | null }
    | { by: 'key_model'; keyId: string; keyName: string | null; model: string }
    | { by: 'project'; projectId: string | null }
    /** A UTC calendar day, `YYYY-MM-DD`. */
    | { by: 'day'; date: string }
  );

type TotalsRow = Record<keyof UsageTotals, string>;

/**
 * Request count, cache hits, tokens and cost of every record in scope, in one query.
 *
 * @example
 * const totals = await reports.totals({ orgId, from: new Date('2026-01-01'), to: new Date() });
 * formatAmount(totals.cost); // '0.0123'
 */
async function usageTotals(db: Database, scope: UsageScope): Promise<UsageTotals> {
  const [row] = rowsOf<TotalsRow>(await db.execute(sql`select ${TOTALS_SELECT} from ${usageSource(scope)}`));
  return toTotals(row!);
}

/**
 * The records in scope summed per model, key, key and model, project or UTC
 * day, in one query. Days come in date order; the others by cost, largest first.
 *
 * @example
 * const groups = await reports.groups({ orgId, from, to }, 'key');
 * // [{ by: 'key', keyId: 'key_…', keyName: 'ci', requests: 3, cost: 4500n, … }]
 */
async function usageGroups(db: Database, scope: UsageScope, grouping: UsageGrouping): Promise<UsageGroup[]> {
  const query = GROUP_QUERIES[grouping];
  const rows = rowsOf<TotalsRow & Record<string, string | null>>(
    await db.execute(sql`select ${query.columns}, ${TOTALS_SELECT} from ${usageSource(scope)}${query.join}
      group by ${query.columns} order by ${query.order}`),
  );
  return rows.map((row) => query.group(row, toTotals(row)));
}

type GroupRow = Record<string, string | null>;

/**
 * Per grouping: its columns (selected and grouped by), a join for names, its order, and the group
 * it makes.
 */
const GROUP_QUERIES: Record<
  UsageGrouping,
  { columns: SQL; join: SQL; order: SQL; group: (row: GroupRow, totals: UsageTotals) => UsageGroup }
> = {
  model: {
    columns: sql`u.model_id`,
    join: sql``,
    order: sql`sum(u.cost_nanos) desc, u.model_id asc`,
    group: (row, totals) => ({ by: 'model', model: row.model_id!, ...totals }),
  },
  key: {
    columns: sql`u.key_id, k.name`,
    join: sql` left join api_keys k on k.id = u.key_id`,
    order: sql`sum(u.cost_nanos) desc, u.key_id asc`,
    group: (row, totals) => ({ by: 'key', keyId: row.key_id!, keyName: row.name ?? null, ...totals }),
  },
  key_model: {
    columns: sql`u.key_id, k.name, u.model_id`,
    join: sql` left join api_keys k on k.id = u.key_id`,
    order: sql`sum(u.cost_nanos) desc, u.key_id asc, u.model_id asc`,
    group: (row, totals) => ({
      by: 'key_model',
      keyId: row.key_id!,
      keyName: row.name ?? null,
      model: row.model_id!,
      ...totals,
    }),
  },
  project: {
    columns: sql`u.project_id`,
    join: sql``,
    order: sql`sum(u.cost_nanos) desc, u.project_id asc nulls last`,
    group: (row, totals) => ({ by: 'project', projectId: row.project_id ?? null, ...totals }),
  },
  day: {
    columns: sql`u.day`,
    join: sql``,
    order: sql`u.day asc`,
    group: (row, totals) => ({ by: 'day', date: row.day!, ...totals }),
  },
};

/**
 * How many requests in scope there are, and how many of them ended in an
 * error (a status of 400 or more: the engine failed, or the client went away).
 * Refusals before a model was called (limits, an empty wallet) leave no record.
 *
 * @example
 * const lastHour = await reports.outcomes({ orgId, from: new Date(Date.now() - 3_600_000), to: new Date() });
 */
async function usageOutcomes(db: Database, scope: UsageScope): Promise<{ requests: number; errors: number }> {
  const [row] = rowsOf<{ requests: string; errors: string }>(
    await db.execute(
      sql`select coalesce(sum(u.requests), 0)::text as requests, coalesce(sum(u.errors), 0)::text as errors
        from ${usageSource(scope)}`,
    ),
  );
  return { requests: Number(row!.requests), errors: Number(row!.errors) };
}

/**
 * When each key of an organization was last used (its newest usage record),
 * one index lookup per key (`usage_key_time_idx`); keys never used are absent.
 *
 * @example
 * const lastUse = await reports.keysLastUsed(orgId); // Map { 'key_…' => 2026-11-22T10:04:00Z }
 */
async function keysLastUsed(db: Database, orgId: string): Promise<Map<string, Date>> {
  const rows = await db
    // Qualified by hand: inside the subquery an unqualified "id" would be the usage record's.
    .select({
      keyId: apiKeys.id,
      lastUsed: sql<
        string | null
      >`(select to_char(max(u.created_at) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') from usage_records u where u.key_id = "api_keys"."id")`,
    })
    .from(apiKeys)
    .where(eq(apiKeys.orgId, orgId));
  return new Map(rows.filter((row) => row.lastUsed !== null).map((row) => [row.keyId, new Date(row.lastUsed!)]));
}

function toTotals(row: TotalsRow): UsageTotals {
  return {
    requests: Number(row.requests),
    cacheHits: Number(row.cacheHits),
    promptTokens: Number(row.promptTokens),
    completionTokens: Number(row.completionTokens),
    cachedTokens: Number(row.cachedTokens),
    reasoningTokens: Number(row.reasoningTokens),
    cost: BigInt(row.cost),
  };
}

/**
 * Usage reports, the service the surfaces read them from (the API's and the operator's summaries,
 * the portal's pages): each method is one query, above or `usage-requests.ts`'s.
 *
 * @example
 * const totals = await services.usageReports.totals({ orgId, from, to });
 */
export class UsageReports {
  constructor(private readonly db: Database) {}

  totals(scope: UsageScope): Promise<UsageTotals> {
    return usageTotals(this.db, scope).catch(reportFailed);
  }

  groups(scope: UsageScope, grouping: UsageGrouping): Promise<UsageGroup[]> {
    return usageGroups(this.db, scope, grouping).catch(reportFailed);
  }

  outcomes(scope: UsageScope): Promise<{ requests: number; errors: number }> {
    return usageOutcomes(this.db, scope).catch(reportFailed);
  }

  keysLastUsed(orgId: string): Promise<Map<string, Date>> {
    return keysLastUsed(this.db, orgId).catch(reportFailed);
  }

  requests(page: UsageScope & { limit: number; after?: UsageCursor }): ReturnType<typeof usageRequests> {
    return usageRequests(this.db, page).catch(reportFailed);
  }
}

/**
 * A report past its statement timeout is a clear 503 that names the setting; anything else goes on
 * as it was.
 */
export function reportFailed(error: unknown): never {
  if (!isStatementTimeout(error)) throw error;
  throw new GatewayError(
    'server_busy',
    'The report ran longer than TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS allows. Ask for a shorter window, or retry later.',
    { headers: { 'Retry-After': '30' }, cause: error },
  );
}
