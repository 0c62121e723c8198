import { inArray, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { usageRecords } from '../../shared/db/schema.js';
import { rowsOf } from '../../shared/db/rows.js';
import { usageSource } from './usage-source.js';

/**
 * What a key or a project spent in a window: the sum of its charges (nano-units), from the daily
 * rollups (a budget's windows are whole UTC days, a month or one), and which of `requestIds` are
 * written already (a budget's rebuild adds only those that are not, `admission/rebuild.ts`). The
 * rollups are written in the statement that writes the records, so the two agree. Two reads, each
 * on an index (`usage_daily_key_idx` or `usage_daily_project_idx`; the records' primary key).
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
  const subject = scope === 'key' ? { keyId: subjectId } : { projectId: subjectId };
  const source = usageSource({ orgId: null, from: window.from, to: window.to, ...subject });
  const [row] = rowsOf<{ spent: string }>(
    await db.execute(sql`select coalesce(sum(u.cost_nanos), 0)::text as spent from ${source}`),
  );
  const written =
    requestIds.length === 0
      ? []
      : await db.select({ id: usageRecords.id }).from(usageRecords).where(inArray(usageRecords.id, requestIds));
  return { spent: BigInt(row?.spent ?? '0'), written: new Set(written.map((w) => w.id)) };
}
