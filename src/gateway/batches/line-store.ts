import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { batches, batchLines } from '../../shared/db/batches-schema.js';
import { Lease, leaseLapsed } from '../../shared/db/lease.js';
import { rowsOf } from '../../shared/db/rows.js';
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
 * once its lease runs out), and their results read back in order for the output file. Lines'
 * ends (those that end together, of one batch) and their batch's counts move in one statement.
 */
export class LineStore {
  /** A line's lease, held by the replica running it. */
  private readonly lease: Lease<typeof batchLines>;

  constructor(
    private readonly db: Database,
    leaseMs: number,
  ) {
    // A line's key is two columns (batch, line): its claim is `claim`'s own statement.
    this.lease = new Lease(db, batchLines, null, leaseMs);
  }

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
    const skip =
      resting.length > 0
        ? sql`and id not in (${sql.join(
            resting.map((id) => sql`${id}`),
            sql`, `,
          )})`
        : sql``;
    // Its own statement (a line's key is two columns), on the lease's clock.
    const lapsed = leaseLapsed(sql`l.lease_until`);
    // Batch by batch, each one's first `limit` open lines in the order the table has them: not
    // every open line sorted by line number at each claim, whose cost grew with the batch (a
    // 10,000-line batch's claim read and sorted its 10,000 lines).
    const result = await bounded(
      this.db.execute(sql`
        update batch_lines set status = 'running', claimed_by = ${replica}, lease_until = ${this.lease.deadline()}
        where (batch_id, line) in (
          select open.batch_id, open.line
          from (select id, created_at from batches
            where status = 'in_progress' and ending = 'completed' ${skip} order by created_at) b
          cross join lateral (
            select l.batch_id, l.line from batch_lines l
            where l.batch_id = b.id
              and ((l.status = 'waiting' and (l.lease_until is null or ${lapsed}))
                or (l.status = 'running' and ${lapsed}))
            limit ${limit}
            for update of l skip locked) open
          limit ${limit})
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

  /**
   * Renews `replica`'s leases on these lines. A line another statement holds is left as it is: it
   * is being written as ended (and a renewal that waited for it would deadlock with that write,
   * which locks its lines in another order).
   */
  async renew(replica: string, keys: Array<{ batchId: string; line: number }>): Promise<void> {
    for (const [batchId, lines] of groupByBatch(keys)) {
      const held = this.db
        .select({ line: batchLines.line })
        .from(batchLines)
        .where(
          and(
            eq(batchLines.batchId, batchId),
            inArray(batchLines.line, lines),
            eq(batchLines.claimedBy, replica),
            eq(batchLines.status, 'running'),
          ),
        )
        .for('update', { skipLocked: true });
      await bounded(
        this.lease.renew(replica, and(eq(batchLines.batchId, batchId), inArray(batchLines.line, held))!, {
          line: batchLines.line,
        }),
      );
    }
  }

  /**
   * Gives lines of one batch back to the waiting ones (a refusal that may pass: a key's limit, a
   * busy store), in one statement.
   */
  async release(batchId: string, lines: number[], replica: string, notBeforeMs: number): Promise<void> {
    if (lines.length === 0) return;
    await bounded(
      // A waiting line's lease is when it may be claimed again.
      this.lease.release(replica, and(eq(batchLines.batchId, batchId), inArray(batchLines.line, lines))!, {
        set: { status: 'waiting' },
        notBeforeMs,
        fields: { line: batchLines.line },
      }),
    );
  }

  /**
   * Records how lines of one batch that `replica` holds ended, and counts them in their batch, in
   * one statement (one batch a statement: two replicas' groups never lock two batches' rows in
   * opposite orders). How many were recorded, by status: a line no longer this replica's (taken
   * over: the other replica records it) is not.
   */
  async finish(
    batchId: string,
    replica: string,
    ended: Array<{ line: number; result: LineResult }>,
  ): Promise<{ done: number; failed: number }> {
    if (ended.length === 0) return { done: 0, failed: 0 };
    // The lines as one JSON parameter: the statement's text is the same for any number of lines.
    const json = JSON.stringify(ended.map(({ line, result }) => recordOf(line, result)));
    const rows = await bounded(
      this.db.execute(sql`
        with input as (
          select * from json_to_recordset(${json}::json) as r(line integer, status text, status_code integer,
            response text, error text, prompt_tokens integer, completion_tokens integer, cached_tokens integer,
            reasoning_tokens integer)),
        ended as (
          update batch_lines l set status = r.status, status_code = r.status_code, response = r.response,
            error = r.error, prompt_tokens = r.prompt_tokens, completion_tokens = r.completion_tokens,
            cached_tokens = r.cached_tokens, reasoning_tokens = r.reasoning_tokens, claimed_by = null,
            lease_until = null
          from input r
          where l.batch_id = ${batchId} and l.line = r.line and l.claimed_by = ${replica} and l.status = 'running'
          returning l.status),
        counted as (
          select count(*) filter (where status = 'done') as done, count(*) filter (where status = 'failed') as failed
          from ended),
        moved as (
          update batches set completed = completed + counted.done, failed = batches.failed + counted.failed
          from counted where batches.id = ${batchId} and counted.done + counted.failed > 0)
        select done, failed from counted`),
    );
    const [row] = rowsOf<{ done: number | string; failed: number | string }>(rows);
    return { done: Number(row?.done ?? 0), failed: Number(row?.failed ?? 0) };
  }

  /**
   * Fails the lines of a batch that will not run (`code`: its wallet ran dry, it was cancelled, its
   * window passed): the waiting ones, and the running ones whose replica died. How many. A line
   * another statement holds (given back, or written as ended) is left to the next round.
   */
  async failUnrun(batchId: string, error: { code: string; message: string }): Promise<number> {
    const rows = await bounded(
      this.db.execute(sql`
        with ended as (
          update batch_lines set status = 'failed', error = ${JSON.stringify(error)}, claimed_by = null,
            lease_until = null
          where batch_id = ${batchId} and line in (
            select line from batch_lines
            where batch_id = ${batchId}
              and (status = 'waiting' or (status = 'running' and ${leaseLapsed(sql`lease_until`)}))
            for update skip locked)
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

/** A line's result as `json_to_recordset` reads it: the columns' names. */
function recordOf(line: number, result: LineResult): Record<string, unknown> {
  return {
    line,
    status: result.status,
    status_code: result.statusCode,
    response: result.response,
    error: result.error ? JSON.stringify(result.error) : null,
    prompt_tokens: result.tokens.promptTokens,
    completion_tokens: result.tokens.completionTokens,
    cached_tokens: result.tokens.cachedTokens,
    reasoning_tokens: result.tokens.reasoningTokens,
  };
}

function groupByBatch(keys: Array<{ batchId: string; line: number }>): Map<string, number[]> {
  const grouped = new Map<string, number[]>();
  for (const { batchId, line } of keys) {
    const lines = grouped.get(batchId);
    if (lines) lines.push(line);
    else grouped.set(batchId, [line]);
  }
  return grouped;
}
