import { and, asc, desc, eq, gte, lt, lte, type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { apiKeys, usageRecords } from '../../shared/db/schema.js';

// Usage reports of one organization (or every one), read from its usage records. Every sum is
// taken in SQL and read back as text, so token counts and money (bigint nanos)
// never pass through a float.

/** Which records a report covers: one organization (every one: null, the operator's view), `from <= created_at < to`, optionally narrowed. */
export interface UsageScope {
  orgId: string | null;
  from: Date;
  to: Date;
  keyId?: string;
  projectId?: string;
  /** The catalog id the usage was recorded under. */
  model?: string;
}

export interface UsageTotals {
  requests: number;
  cacheHits: number;
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt tokens, those read from the engine's prefix cache (billed at the cached-input price). */
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

export type UsageRecord = typeof usageRecords.$inferSelect;

/** A position in the newest-first list: the last record seen. `createdAt` keeps PostgreSQL's microseconds. */
export interface UsageCursor {
  createdAt: string;
  id: string;
}

const totalsColumns = {
  requests: sql<string>`count(*)::text`,
  cacheHits: sql<string>`(count(*) filter (where ${usageRecords.cacheHit}))::text`,
  promptTokens: sql<string>`coalesce(sum(${usageRecords.promptTokens}), 0)::text`,
  completionTokens: sql<string>`coalesce(sum(${usageRecords.completionTokens}), 0)::text`,
  cachedTokens: sql<string>`coalesce(sum(${usageRecords.cachedTokens}), 0)::text`,
  reasoningTokens: sql<string>`coalesce(sum(${usageRecords.reasoningTokens}), 0)::text`,
  cost: sql<string>`coalesce(sum(${usageRecords.cost}), 0)::text`,
};
type TotalsRow = { [K in keyof typeof totalsColumns]: string };

const costDesc = sql`sum(${usageRecords.cost}) desc`;
// Literal SQL (no bound parameters), so the GROUP BY expression is the selected one.
const utcDay = sql<string>`to_char(${usageRecords.createdAt} at time zone 'UTC', 'YYYY-MM-DD')`;
const utcMicros = sql<string>`to_char(${usageRecords.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * Request count, cache hits, tokens and cost of every record in scope, in one query.
 *
 * @example
 * const totals = await reports.totals({ orgId, from: new Date('2026-01-01'), to: new Date() });
 * formatAmount(totals.cost); // '0.0123'
 */
async function usageTotals(db: Database, scope: UsageScope): Promise<UsageTotals> {
  const [row] = await db.select(totalsColumns).from(usageRecords).where(scopeWhere(scope));
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
  const where = scopeWhere(scope);
  switch (grouping) {
    case 'model': {
      const rows = await db
        .select({ model: usageRecords.modelId, ...totalsColumns })
        .from(usageRecords)
        .where(where)
        .groupBy(usageRecords.modelId)
        .orderBy(costDesc, asc(usageRecords.modelId));
      return rows.map((row) => ({ by: 'model', model: row.model, ...toTotals(row) }));
    }
    case 'key': {
      const rows = await db
        .select({ keyId: usageRecords.keyId, keyName: apiKeys.name, ...totalsColumns })
        .from(usageRecords)
        .leftJoin(apiKeys, eq(apiKeys.id, usageRecords.keyId))
        .where(where)
        .groupBy(usageRecords.keyId, apiKeys.name)
        .orderBy(costDesc, asc(usageRecords.keyId));
      return rows.map((row) => ({ by: 'key', keyId: row.keyId, keyName: row.keyName, ...toTotals(row) }));
    }
    case 'key_model': {
      const rows = await db
        .select({ keyId: usageRecords.keyId, keyName: apiKeys.name, model: usageRecords.modelId, ...totalsColumns })
        .from(usageRecords)
        .leftJoin(apiKeys, eq(apiKeys.id, usageRecords.keyId))
        .where(where)
        .groupBy(usageRecords.keyId, apiKeys.name, usageRecords.modelId)
        .orderBy(costDesc, asc(usageRecords.keyId), asc(usageRecords.modelId));
      return rows.map((row) => ({
        by: 'key_model',
        keyId: row.keyId,
        keyName: row.keyName,
        model: row.model,
        ...toTotals(row),
      }));
    }
    case 'project': {
      const rows = await db
        .select({ projectId: usageRecords.projectId, ...totalsColumns })
        .from(usageRecords)
        .where(where)
        .groupBy(usageRecords.projectId)
        .orderBy(costDesc, sql`${usageRecords.projectId} asc nulls last`);
      return rows.map((row) => ({ by: 'project', projectId: row.projectId, ...toTotals(row) }));
    }
    case 'day': {
      const rows = await db
        .select({ date: utcDay, ...totalsColumns })
        .from(usageRecords)
        .where(where)
        .groupBy(utcDay)
        .orderBy(asc(utcDay));
      return rows.map((row) => ({ by: 'day', date: row.date, ...toTotals(row) }));
    }
  }
}

/**
 * How many records in scope there are, and how many of them ended in an
 * error (a status of 400 or more: the engine failed, or the client went away).
 * Refusals before a model was called (limits, an empty wallet) leave no record.
 *
 * @example
 * const lastHour = await reports.outcomes({ orgId, from: new Date(Date.now() - 3_600_000), to: new Date() });
 */
async function usageOutcomes(db: Database, scope: UsageScope): Promise<{ requests: number; errors: number }> {
  const [row] = await db
    .select({
      requests: sql<string>`count(*)::text`,
      errors: sql<string>`(count(*) filter (where ${usageRecords.status} >= 400))::text`,
    })
    .from(usageRecords)
    .where(scopeWhere(scope));
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

/**
 * One page of the records in scope, newest first by (created_at, id), after
 * `after` when given. Keyset pagination: a page costs the same however deep it is.
 *
 * @example
 * const first = await reports.requests({ orgId, from, to, limit: 50 });
 * const next = first.hasMore ? await reports.requests({ orgId, from, to, limit: 50, after: first.next! }) : null;
 */
async function usageRequests(
  db: Database,
  { limit, after, ...scope }: UsageScope & { limit: number; after?: UsageCursor },
): Promise<{ records: UsageRecord[]; hasMore: boolean; next: UsageCursor | null }> {
  const conditions = [scopeWhere(scope)];
  if (after) {
    // The plain bound lets the (org_id, created_at) index stop the scan; the row comparison breaks
    // ties by id.
    conditions.push(
      lte(usageRecords.createdAt, sql`${after.createdAt}::timestamptz`),
      sql`(${usageRecords.createdAt}, ${usageRecords.id}) < (${after.createdAt}::timestamptz, ${after.id})`,
    );
  }
  const rows = await db
    .select({ record: usageRecords, cursorAt: utcMicros })
    .from(usageRecords)
    .where(and(...conditions))
    .orderBy(desc(usageRecords.createdAt), desc(usageRecords.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  const last = page.at(-1);
  return {
    records: page.map((row) => row.record),
    hasMore,
    next: hasMore && last ? { createdAt: last.cursorAt, id: last.record.id } : null,
  };
}

function scopeWhere({ orgId, from, to, keyId, projectId, model }: UsageScope): SQL {
  const conditions = [gte(usageRecords.createdAt, from), lt(usageRecords.createdAt, to)];
  if (orgId !== null) conditions.push(eq(usageRecords.orgId, orgId));
  if (keyId !== undefined) conditions.push(eq(usageRecords.keyId, keyId));
  if (projectId !== undefined) conditions.push(eq(usageRecords.projectId, projectId));
  if (model !== undefined) conditions.push(eq(usageRecords.modelId, model));
  return and(...conditions)!;
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

// The cursor is opaque to clients: base64url of "<created_at with microseconds>,<id>".
const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** A cursor as clients see it: opaque. */
export function encodeCursor(cursor: UsageCursor): string {
  return Buffer.from(`${cursor.createdAt},${cursor.id}`).toString('base64url');
}

/** The cursor a client sent back, or null for anything we did not make. */
export function decodeCursor(text: string): UsageCursor | null {
  if (!/^[A-Za-z0-9_-]{1,600}$/.test(text)) return null;
  const decoded = Buffer.from(text, 'base64url').toString('utf8');
  const comma = decoded.indexOf(',');
  const createdAt = decoded.slice(0, comma);
  const id = decoded.slice(comma + 1);
  if (comma < 0 || !CURSOR_TIME.test(createdAt) || !/^[\x21-\x7e]{1,200}$/.test(id)) return null;
  // Round-trip through Date so a forged cursor cannot name a day that does not exist (PostgreSQL
  // would refuse it).
  const ms = Date.parse(createdAt);
  if (!(ms >= 0) || new Date(ms).toISOString().slice(0, 19) !== createdAt.slice(0, 19)) return null;
  return { createdAt, id };
}

/**
 * Usage reports, the service the surfaces read them from (the API's and the
 * operator's summaries, the portal's pages): each method is one query above.
 *
 * @example
 * const totals = await services.usageReports.totals({ orgId, from, to });
 */
export class UsageReports {
  constructor(private readonly db: Database) {}

  totals(scope: UsageScope): Promise<UsageTotals> {
    return usageTotals(this.db, scope);
  }

  groups(scope: UsageScope, grouping: UsageGrouping): Promise<UsageGroup[]> {
    return usageGroups(this.db, scope, grouping);
  }

  outcomes(scope: UsageScope): Promise<{ requests: number; errors: number }> {
    return usageOutcomes(this.db, scope);
  }

  keysLastUsed(orgId: string): Promise<Map<string, Date>> {
    return keysLastUsed(this.db, orgId);
  }

  requests(page: UsageScope & { limit: number; after?: UsageCursor }): ReturnType<typeof usageRequests> {
    return usageRequests(this.db, page);
  }
}
