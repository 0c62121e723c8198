import { and, eq, gte, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { usageRecords } from '../../shared/db/schema.js';

/**
 * Tokens (prompt and completion) a key has used since `since`, from its usage
 * records, cache hits left out (they count against no limit); the monthly
 * quota starts its count from this.
 *
 * @example
 * await keyTokensSince(db, 'key_1', new Date(Date.UTC(2026, 10, 1)));
 */
export async function keyTokensSince(db: Database, keyId: string, since: Date): Promise<number> {
  const [row] = await db
    .select({
      tokens: sql<string>`coalesce(sum(${usageRecords.promptTokens} + ${usageRecords.completionTokens}), 0)::text`,
    })
    .from(usageRecords)
    .where(and(eq(usageRecords.keyId, keyId), gte(usageRecords.createdAt, since), eq(usageRecords.cacheHit, false)));
  return Number(row?.tokens ?? 0);
}
