import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { batches, batchLines } from '../../shared/db/batches-schema.js';
import { rowsOf } from '../stored-responses/group-save.js';
import { bounded } from './store.js';

export type LineRow = typeof batchLines.$inferSelect;
export type NewLine = typeof batchLines.$inferInsert;

/** How a line ended: `done` (the engine's answer, 200) or `failed` (an error line). */
export interface LineResult {
  status: 'done' | 'failed';
  statusCode: number | null;
  response: string | null;
  error: { code: string; message: string } | null;
  tokens: { promptTokens: number; completionTokens: number; cachedTokens: number; reasoningTokens: number };
}

export const NO_TOKENS = { promptTokens: 0, completionTokens: 0, cachedTokens: 0, reasoningTokens: 0 };

/**
 * Batches' lines in the gateway's database: written as the input file is read, claimed by replicas
 * with leases (`claimed_by`, `lease_until`, renewed while they run; a dead replica's taken over
 * once its lease runs out), and their results read back in order for the output file. A line's
 * end and its batch's counts move in one statement.
 */
export class LineStore {
  constructor(
    private readonly db: Database,
    private readonly leaseMs: number,
  ) {}

  /** Writes lines read from the input file; a line written already (a replica that died) stays. */
  async insert(lines: NewLine[]): Promise<void> {
    if (lines.length === 0) return;
    await bounded(this.db.insert(batchLines).values(lines).onConflictDoNothing());
  }

  /**
   * Claims up to `limit` lines for `replica`: waiting ones, and running ones whose replica's lease
   * ran out, of batches in progress, oldest batch first. Two replicas never claim one line.
   */
  async claim(replica: string, limit: number, resting: readonly string[] = []): Promise<LineRow[]> {
    if (limit <= 0) return [];
    const lease = new Date(Date.now() + this.leaseMs).toISOString();
    const skip =
      resting.length > 0
        ? sql`and b.id not in (${sql.join(
            resting.map((id) => sql`${id}`),
            sql`, `,
          )})`
        : sql``;
    const result = await bounded(
      this.db.execute(sql`
        update batch_lines set status = 'running', claimed_by = ${replica}, lease_until = ${lease}::timestamptz
        where (batch_id, line) in (
          select l.batch_id, l.line from batch_lines l join batches b on b.id = l.batch_id
          where b.status = 'in_progress' and b.ending = 'completed' ${skip}
            and ((l.status = 'waiting' and (l.lease_until is null or l.lease_until < now()))
              or (l.status = 'running' and l.lease_until < now()))
          order by b.created_at, l.line
          limit ${limit}
          for update of l skip locked)
        returning batch_id, line, custom_id, url, body, request_id`),
    );
    return rowsOf<Record<string, unknown>>(result).map((row) => ({
      batchId: row.batch_id as string,
      line: row.line as number,
      customId: row.custom_id as string,
      url: row.url as string,
      body: row.body as string,
      requestId: row.request_id as string,
    })) as LineRow[];
  }

  /** Renews `replica`'s leases on these lines. */
  async renew(replica: string, keys: Array<{ batchId: string; line: number }>): Promise<void> {
    for (const [batchId, lines] of groupByBatch(keys)) {
      await bounded(
        this.db
          .update(batchLines)
          .set({ leaseUntil: new Date(Date.now() + this.leaseMs) })
          .where(
            and(
              eq(batchLines.batchId, batchId),
              inArray(batchLines.line, lines),
              eq(batchLines.claimedBy, replica),
              eq(batchLines.status, 'running'),
            ),
          ),
      );
    }
  }

  /** Gives a line back to the waiting ones (a refusal that may pass: a key's limit, a busy store). */
  async release(batchId: string, line: number, replica: string, notBeforeMs: number): Promise<void> {
    await bounded(
      this.db
        .update(batchLines)
        // A waiting line's lease is when it may be claimed again.
        .set({ status: 'waiting', claimedBy: null, leaseUntil: new Date(Date.now() + notBeforeMs) })
        .where(and(eq(batchLines.batchId, batchId), eq(batchLines.line, line), eq(batchLines.claimedBy, replica))),
    );
  }

  /**
   * Records how a line `replica` holds ended, and counts it in its batch, in one statement; false
   * when it was no longer this replica's (taken over: the other replica records it).
   */
  async finish(batchId: string, line: number, replica: string, result: LineResult): Promise<boolean> {
    const done = result.status === 'done' ? 1 : 0;
    const { promptTokens, completionTokens, cachedTokens, reasoningTokens } = result.tokens;
    const rows = await bounded(
      this.db.execute(sql`
        with ended as (
          update batch_lines set status = ${result.status}, status_code = ${result.statusCode},
            response = ${result.response}, error = ${result.error ? JSON.stringify(result.error) : null},
            prompt_tokens = ${promptTokens}, completion_tokens = ${completionTokens},
            cached_tokens = ${cachedTokens}, reasoning_tokens = ${reasoningTokens},
            claimed_by = null, lease_until = null
          where batch_id = ${batchId} and line = ${line} and claimed_by = ${replica} and status = 'running'
          returning batch_id)
        update batches set completed = completed + ${done}, failed = failed + ${1 - done}
        from ended where batches.id = ended.batch_id
        returning batches.id`),
    );
    return rowsOf(rows).length > 0;
  }

  /**
   * Fails the lines of a batch that will not run (`code`: its wallet ran dry, it was cancelled, its
   * window passed): the waiting ones, and the running ones whose replica died. How many.
   */
  async failUnrun(batchId: string, error: { code: string; message: string }): Promise<number> {
    const rows = await bounded(
      this.db.execute(sql`
        with ended as (
          update batch_lines set status = 'failed', error = ${JSON.stringify(error)}, claimed_by = null,
            lease_until = null
          where batch_id = ${batchId}
            and (status = 'waiting' or (status = 'running' and lease_until < now()))
          returning line)
        update batches set failed = failed + (select count(*) from ended)
        where id = ${batchId}
        returning (select count(*) from ended) as n`),
    );
    return Number(rowsOf<{ n: number | string }>(rows)[0]?.n ?? 0);
  }

  /** A page of a batch's ended lines of one status, after `after`, in line order. */
  page(batchId: string, status: 'done' | 'failed', after: number, limit: number): Promise<LineRow[]> {
    return bounded(
      this.db
        .select()
        .from(batchLines)
        .where(and(eq(batchLines.batchId, batchId), eq(batchLines.status, status), gt(batchLines.line, after)))
        .orderBy(asc(batchLines.line))
        .limit(limit),
    );
  }

  /** The tokens a batch's lines were billed for, summed (its `usage`). */
  async usage(batchId: string) {
    const [row] = await bounded(
      this.db
        .select({
          prompt: sql<string>`coalesce(sum(${batchLines.promptTokens}), 0)`,
          completion: sql<string>`coalesce(sum(${batchLines.completionTokens}), 0)`,
          cached: sql<string>`coalesce(sum(${batchLines.cachedTokens}), 0)`,
          reasoning: sql<string>`coalesce(sum(${batchLines.reasoningTokens}), 0)`,
        })
        .from(batchLines)
        .where(eq(batchLines.batchId, batchId)),
    );
    const input = Number(row?.prompt ?? 0);
    const output = Number(row?.completion ?? 0);
    return {
      input_tokens: input,
      input_tokens_details: { cached_tokens: Number(row?.cached ?? 0) },
      output_tokens: output,
      output_tokens_details: { reasoning_tokens: Number(row?.reasoning ?? 0) },
      total_tokens: input + output,
    };
  }

  /** Lines waiting in batches in progress, every replica's: the gauge's figure. */
  async waiting(): Promise<number> {
    const [row] = await bounded(
      this.db
        .select({ n: sql<string>`count(*)` })
        .from(batchLines)
        .innerJoin(batches, eq(batches.id, batchLines.batchId))
        .where(and(eq(batchLines.status, 'waiting'), eq(batches.status, 'in_progress'))),
    );
    return Number(row?.n ?? 0);
  }
}

function groupByBatch(keys: Array<{ batchId: string; line: number }>): Map<string, number[]> {
  const grouped = new Map<string, number[]>();
  for (const { batchId, line } of keys) grouped.set(batchId, [...(grouped.get(batchId) ?? []), line]);
  return grouped;
}
