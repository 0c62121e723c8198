import { sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { rowsOf } from '../../shared/db/rows.js';
import { usageSource } from './usage-source.js';

/**
 * Tokens (prompt and completion) a key has used since `since`, cache hits left out (they count
 * against no limit); the monthly quota starts its count from this. From the key's daily rollups
 * (`usage_daily_key_idx`), and the records of a partial first day, if `since` is not midnight
 * (UTC).
 *
 * @example
 * await keyTokensSince(db, 'key_1', new Date(Date.UTC(2026, 10, 1)));
 */
export async function keyTokensSince(db: Database, keyId: string, since: Date): Promise<number> {
  // Through the end of tomorrow (UTC): every record written so far, and today's rollup whole.
  const to = new Date((Math.floor(Date.now() / 86_400_000) + 2) * 86_400_000);
  const source = usageSource({ orgId: null, keyId, from: since, to });
  const [row] = rowsOf<{ tokens: string }>(
    await db.execute(
      sql`select coalesce(sum(u.prompt_tokens + u.completion_tokens - u.cache_hit_tokens), 0)::text as tokens
        from ${source}`,
    ),
  );
  return Number(row?.tokens ?? 0);
}
