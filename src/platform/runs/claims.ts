import { and, eq, inArray, ne, notInArray, or, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { Lease, leaseLapsed } from '../../shared/db/lease.js';
import { type RunState, runs } from '../../shared/db/schema.js';
import { storable, storableValue } from './untrusted.js';

type RunRow = typeof runs.$inferSelect;

/** How a claimed run ended, as its worker records it. */
export interface RunOutcome {
  state: Extract<RunState, 'APPLIED' | 'FAILED' | 'CANCELED'>;
  exitCode: number | null;
  failure: string | null;
  outputs: Record<string, unknown> | null;
  publicUrl: string | null;
  webTarget: string | null;
}

/**
 * What workers do with runs (`RunWorker`), beside what people ask of them
 * (`RunService`): take a queued run, renew the claim while applying it,
 * record how it ended, and fail the runs whose worker died.
 */
export class RunClaims {
  constructor(
    private readonly db: Database,
    /** Appends a line of the gateway's own to a run's log. */
    private readonly appendNote: (runId: string, text: string) => Promise<void>,
  ) {}

  /**
   * Takes the oldest queued run for `worker`, or null. Two workers never take the same run (`FOR
   * UPDATE SKIP LOCKED`).
   */
  async claim(worker: string, leaseMs: number): Promise<RunRow | null> {
    const [row] = await this.lease(leaseMs).claim(worker, {
      where: eq(runs.state, 'QUEUED'),
      order: sql`${runs.createdAt}, ${runs.id}`,
      set: { state: 'RUNNING', startedAt: sql`now()` },
    });
    return row ?? null;
  }

  /**
   * Renews `worker`'s claims; answers which of them were asked to cancel, and which it no longer
   * holds.
   */
  async renew(worker: string, ids: string[], leaseMs: number): Promise<{ cancel: string[]; lost: string[] }> {
    if (ids.length === 0) return { cancel: [], lost: [] };
    const held = await this.lease(leaseMs).renew(worker, and(inArray(runs.id, ids), eq(runs.state, 'RUNNING'))!, {
      id: runs.id,
      cancelRequestedAt: runs.cancelRequestedAt,
    });
    const heldIds = new Set(held.map((row) => row.id));
    return {
      cancel: held.filter((row) => row.cancelRequestedAt !== null).map((row) => row.id),
      lost: ids.filter((id) => !heldIds.has(id)),
    };
  }

  /** The runs' lease: `leaseMs` long, on the database's clock. */
  private lease(leaseMs: number): Lease<typeof runs> {
    return new Lease(this.db, runs, runs.id, leaseMs);
  }

  /**
   * Records how a claimed run ended; false when `worker` no longer held it
   * (its claim had expired). Its text is stored escaped (`storable`); should
   * the store still refuse the outcome, the run is recorded as FAILED without
   * its outputs, saying so: it never stays RUNNING.
   */
  async finish(worker: string, id: string, outcome: RunOutcome): Promise<boolean> {
    const record = (values: RunOutcome) =>
      this.db
        .update(runs)
        .set({ ...values, finishedAt: sql`now()`, leaseUntil: null })
        .where(and(eq(runs.id, id), eq(runs.claimedBy, worker), eq(runs.state, 'RUNNING')))
        .returning({ id: runs.id });
    const safe = {
      ...outcome,
      failure: outcome.failure === null ? null : storable(outcome.failure),
      outputs: outcome.outputs && (storableValue(outcome.outputs) as Record<string, unknown>),
    };
    let rows;
    try {
      rows = await record(safe);
    } catch {
      const failure = `${safe.failure ?? `It ended ${safe.state}`}; its outcome could not be stored as it was, so it is recorded without its outputs.`;
      rows = await record({ ...safe, state: 'FAILED', failure, outputs: null, publicUrl: null, webTarget: null });
    }
    return rows.length > 0;
  }

  /**
   * Fails the runs whose claim expired: another worker's that died, or one of
   * `self`'s own that it no longer applies (`active`: those it renews), such
   * as a run whose outcome it could not record. Answers their ids.
   */
  async failAbandoned(self: string, active: string[] = []): Promise<string[]> {
    const notOwnActive = active.length === 0 ? undefined : or(ne(runs.claimedBy, self), notInArray(runs.id, active));
    const rows = await this.db
      .update(runs)
      .set({
        state: 'FAILED',
        failure: 'The worker applying it stopped (its claim expired); the cluster may be partly changed. Apply again.',
        finishedAt: sql`now()`,
        leaseUntil: null,
      })
      .where(and(eq(runs.state, 'RUNNING'), leaseLapsed(runs.leaseUntil), notOwnActive))
      .returning({ id: runs.id });
    for (const { id } of rows)
      await this.appendNote(id, '\n[tollgate] The worker applying this run stopped; the run FAILED.\n');
    return rows.map((row) => row.id);
  }
}
