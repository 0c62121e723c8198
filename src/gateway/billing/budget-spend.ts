import { and, eq, gte, inArray, lt, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { usageRecords } from '../../shared/db/schema.js';

/**
 * What a key or a project spent in a window, from the usage records: the sum of their charges (nano-units), and
 * which of `requestIds` are written already (a budget's rebuild adds only those that are not, `admission/rebuild.ts`).
 * Two reads, each on an index (`usage_key_time_idx`, `usage_project_time_idx`).
 *
 * @example
 * await budgetSpend(db, 'key', 'key_1', { from: new Date('2026-11-01Z'), to: new Date('2026-12-01Z') }, []);
 */
export async function budgetSpend(
  db: Database,
  scope: 'key' | 'project',
  subjectId: string,
  window: { from: Date; to: Date },
  requestIds: string[],
): Promise<{ spent: bigint; written: Set<string> }> {
  const subject = scope === 'key' ? eq(usageRecords.keyId, subjectId) : eq(usageRecords.projectId, subjectId);
  const [row] = await db
    .select({ spent: sql<string>`coalesce(sum(${usageRecords.cost}), 0)::text` })
    .from(usageRecords)
    .where(and(subject, gte(usageRecords.createdAt, window.from), lt(usageRecords.createdAt, window.to)));
  const written =
    requestIds.length === 0
      ? []
      : await db.select({ id: usageRecords.id }).from(usageRecords).where(inArray(usageRecords.id, requestIds));
  return { spent: BigInt(row?.spent ?? '0'), written: new Set(written.map((w) => w.id)) };
}
