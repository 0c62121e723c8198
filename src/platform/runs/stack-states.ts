import { and, eq, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { stackStates } from '../../shared/db/schema.js';

/** Each stack's OpenTofu state on each cluster, kept from its last run for the next. */
export class StackStates {
  constructor(private readonly db: Database) {}

  /**
   * The stack's (by id: not another stack that had its name) state on the cluster from its last
   * run, or null.
   */
  async load(clusterId: string, stackId: string): Promise<Buffer | null> {
    const [row] = await this.db
      .select({ state: stackStates.state })
      .from(stackStates)
      .where(and(eq(stackStates.clusterId, clusterId), eq(stackStates.stackId, stackId)));
    return row ? Buffer.from(row.state) : null;
  }

  async save(clusterId: string, stackId: string, state: Buffer): Promise<void> {
    await this.db
      .insert(stackStates)
      .values({ clusterId, stackId, state })
      .onConflictDoUpdate({
        target: [stackStates.clusterId, stackStates.stackId],
        set: { state, updatedAt: sql`now()` },
      });
  }
}
