import { and, eq, inArray } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { backgroundResponses } from '../../shared/db/schema.js';
import { withinStoreTimeout } from '../../shared/db/timeout.js';

/**
 * Which of `replica`'s jobs `ids` were asked to cancel (on any replica: `requestCancel`). A read
 * only, by primary key, so the replica running them can ask every few hundred milliseconds while
 * it runs any, far more often than it renews their leases.
 */
export async function cancelsRequested(db: Database, replica: string, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await withinStoreTimeout(
    db
      .select({ id: backgroundResponses.id })
      .from(backgroundResponses)
      .where(
        and(
          inArray(backgroundResponses.id, ids),
          eq(backgroundResponses.claimedBy, replica),
          eq(backgroundResponses.cancelRequested, true),
        ),
      ),
  );
  return rows.map((row) => row.id);
}
