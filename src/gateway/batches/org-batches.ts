import { and, desc, eq, inArray, isNotNull, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { batches } from '../../shared/db/batches-schema.js';
import { usageRecords } from '../../shared/db/schema.js';
import { bounded } from './store.js';
import { isBatchId, type BatchRow } from './objects.js';

/** A batch as the portal lists it: its row and what its lines have been billed so far. */
export interface BatchWithCost {
  batch: BatchRow;
  /** Nano-units, from its lines' usage records (`usage_batch_idx`). */
  cost: bigint;
}

/**
 * An organization's batches, every project's, for its people in the portal (the API shows a key
 * only its own project's). Another organization's batch is never read: every query names the
 * organization.
 *
 * @example
 * const rows = await deps.batches.org.latest(actor.orgId, 50);
 */
export class OrgBatches {
  constructor(private readonly db: Database) {}

  /** The organization's newest batches, with their cost so far. */
  async latest(orgId: string, limit: number): Promise<BatchWithCost[]> {
    const rows = await bounded(
      this.db
        .select()
        .from(batches)
        .where(eq(batches.orgId, orgId))
        .orderBy(desc(batches.createdAt), desc(batches.id))
        .limit(limit),
    );
    const costs = await this.costs(
      orgId,
      rows.map((row) => row.id),
    );
    return rows.map((batch) => ({ batch, cost: costs.get(batch.id) ?? 0n }));
  }

  /** One of the organization's batches; null for another's, as for an unknown id. */
  async get(orgId: string, id: string): Promise<BatchRow | null> {
    if (!isBatchId(id)) return null;
    const [row] = await bounded(
      this.db
        .select()
        .from(batches)
        .where(and(eq(batches.id, id), eq(batches.orgId, orgId))),
    );
    return row ?? null;
  }

  private async costs(orgId: string, ids: string[]): Promise<Map<string, bigint>> {
    if (ids.length === 0) return new Map();
    const rows = await bounded(
      this.db
        .select({ batchId: usageRecords.batchId, cost: sql<string>`sum(${usageRecords.cost})` })
        .from(usageRecords)
        .where(and(eq(usageRecords.orgId, orgId), isNotNull(usageRecords.batchId), inArray(usageRecords.batchId, ids)))
        .groupBy(usageRecords.batchId),
    );
    return new Map(rows.map((row) => [row.batchId!, BigInt(row.cost)]));
  }
}
