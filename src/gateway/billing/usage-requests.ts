import { and, desc, eq, gte, lt, lte, type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { usageRecords } from '../../shared/db/schema.js';
import type { UsageScope } from './usage-source.js';

// The list of a scope's requests (`/v1/usage/requests`, the portal's usage page, the operator's):
// the one usage report that reads the records themselves, a page at a time, and the opaque cursor a
// client pages with. The sums are `usage-reports.ts`'s.

export type UsageRecord = typeof usageRecords.$inferSelect;

/**
 * A position in the newest-first list: the last record seen. `createdAt` keeps PostgreSQL's
 * microseconds.
 */
export interface UsageCursor {
  createdAt: string;
  id: string;
}

const utcMicros = sql<string>`to_char(${usageRecords.createdAt} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * One page of the records in scope, newest first by (created_at, id), after
 * `after` when given. Keyset pagination: a page costs the same however deep it is.
 *
 * @example
 * const first = await reports.requests({ orgId, from, to, limit: 50 });
 * const next = first.hasMore ? await reports.requests({ orgId, from, to, limit: 50, after: first.next! }) : null;
 */
export async function usageRequests(
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
