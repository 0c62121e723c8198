import { and, asc, count, desc, eq, gt, sql } from 'drizzle-orm';
import type { ClusterService } from '../clusters/service.js';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { type RunState, runLogChunks, runs } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Actor } from '../people/permissions.js';
import type { StackCatalog } from '../stacks/service.js';
import { checkInputs } from './inputs.js';
import { alreadyApplying, checkRunTarget, type RunRequest } from './queue.js';

export type { RunRequest } from './queue.js';
import { isUniqueViolation } from '../../shared/db/errors.js';
import { storable } from './untrusted.js';
import { StackStates } from './stack-states.js';
import { RunClaims } from './claims.js';

export type { RunOutcome } from './claims.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Log pieces read at once (each at most 64 Ki characters): a reader of a long log is answered page
 * by page.
 */
const LOG_PAGE = 64;
/** How often a followed log looks for new pieces (another process's worker may write them). */
const FOLLOW_POLL_MS = 250;
/** How often a cancel that waits looks whether the run has ended. */
const CANCEL_POLL_MS = 100;

export type RunRow = typeof runs.$inferSelect;

/** The states a run ends in; it never leaves one. */
export const FINAL_STATES: readonly RunState[] = ['APPLIED', 'FAILED', 'CANCELED'];

export interface LogPiece {
  seq: number;
  data: string;
}

/** The last item of a followed log: the state the run ended in. */
export interface RunEnd {
  ended: RunState;
}

/**
 * Who applies runs in this process (`RunWorker`): it stops one at once, and records it ended within
 * a bound.
 */
export interface RunStopper {
  cancelHere(runId: string): unknown;
  /**
   * How long a stopped run may take to be recorded as ended (the kill grace, the record time, two
   * polls).
   */
  readonly endsWithinMs: number;
}

/**
 * Runs in the store: queued by members of the cluster's organization,
 * claimed by workers (one each: `FOR UPDATE SKIP LOCKED`), kept with their
 * log. At most one run per cluster and stack is queued or running (a
 * partial unique index: the 409 holds across replicas).
 *
 * @example
 * const run = await runService.queue(actor, { clusterId, stackName: 'monitoring', inputs: { retention_days: 30 } });
 */
export class RunService {
  constructor(
    private readonly db: Database,
    private readonly clusters: ClusterService,
    private readonly stacks: StackCatalog,
    /**
     * Throws (503) when there is no OpenTofu or Terraform to apply with, or no sandbox to apply in:
     * nothing is queued then.
     */
    private readonly requireRunner: () => Promise<void>,
  ) {
    this.stackStates = new StackStates(db);
    this.claims = new RunClaims(db, (runId, text) => this.appendLog(runId, null, text));
  }

  /** What workers do with runs: claim, renew, record how they ended (`claims.ts`). */
  readonly claims: RunClaims;

  /** Each stack's OpenTofu state on each cluster, which a run reads and writes. */
  readonly stackStates: StackStates;

  /**
   * Checks the stack (visible to `actor`, applicable to the cluster's profile), the target and the
   * inputs, then queues the run.
   */
  async queue(actor: Actor, request: RunRequest): Promise<RunRow> {
    await this.requireRunner();
    const { cluster, stack } = await checkRunTarget(this.clusters, this.stacks, actor, request);
    const inputs = checkInputs(stack.inputs, request.inputs);
    try {
      const [row] = await this.db
        .insert(runs)
        .values({
          id: newId('run'),
          orgId: cluster.orgId,
          clusterId: cluster.id,
          stackName: stack.name,
          stackId: stack.id,
          packageSha256: stack.packageSha256,
          nodeId: request.nodeId ?? null,
          inputs,
          createdBy: actor.userId,
        })
        .returning();
      return row!;
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      throw await alreadyApplying(this.db, cluster.id, stack.name);
    }
  }

  /** A run `actor` may see (its cluster's organization; platform admins all), or 404. */
  async get(actor: Actor, id: string): Promise<RunRow> {
    const scope = scopeOf(actor);
    const [row] = await this.db
      .select()
      .from(runs)
      .where(and(eq(runs.id, id), scope === null ? undefined : eq(runs.orgId, scope)));
    if (!row) throw new GatewayError('not_found', `Run ${id} does not exist.`);
    return row;
  }

  /** One page of a cluster's runs, newest first. */
  async list(
    actor: Actor,
    clusterId: string,
    page: { offset: number; limit: number },
  ): Promise<{ rows: RunRow[]; total: number }> {
    await this.clusters.get(clusterId, scopeOf(actor));
    const where = eq(runs.clusterId, clusterId);
    const [{ total } = { total: 0 }] = await this.db.select({ total: count() }).from(runs).where(where);
    const rows = await this.db
      .select()
      .from(runs)
      .where(where)
      .orderBy(desc(runs.createdAt), desc(runs.id))
      .limit(page.limit)
      .offset(page.offset);
    return { rows, total };
  }

  /**
   * Asks for a run to stop. A queued run is canceled at once; a running one
   * is marked, and its worker signals the tool (see `RunWorker`). A run that
   * has ended is a 409.
   */
  async requestCancel(actor: Actor, id: string): Promise<RunRow> {
    const run = await this.get(actor, id);
    if (FINAL_STATES.includes(run.state))
      throw new GatewayError('conflict', `Run ${id} has ended already (${run.state}).`);
    const [canceled] = await this.db
      .update(runs)
      .set({
        state: 'CANCELED',
        cancelRequestedAt: sql`now()`,
        finishedAt: sql`now()`,
        failure: 'Canceled before it started.',
      })
      .where(and(eq(runs.id, id), eq(runs.state, 'QUEUED')))
      .returning();
    if (canceled) return canceled;
    const [marked] = await this.db
      .update(runs)
      .set({ cancelRequestedAt: sql`coalesce(${runs.cancelRequestedAt}, now())` })
      .where(and(eq(runs.id, id), eq(runs.state, 'RUNNING')))
      .returning();
    return marked ?? this.get(actor, id);
  }

  /** Asks for a run to stop (`requestCancel`), and stops it at once if `here` is applying it. */
  async cancel(actor: Actor, id: string, here: RunStopper): Promise<RunRow> {
    const run = await this.requestCancel(actor, id);
    here.cancelHere(run.id);
    return run;
  }

  /**
   * `cancel`, then waits until the run has ended, or for as long as its worker may take to record
   * it.
   */
  async cancelAndWait(actor: Actor, id: string, here: RunStopper): Promise<{ run: RunRow; ended: boolean }> {
    let run = await this.cancel(actor, id, here);
    const deadline = Date.now() + here.endsWithinMs;
    while (!FINAL_STATES.includes(run.state) && Date.now() < deadline) {
      await sleep(CANCEL_POLL_MS);
      run = await this.get(actor, id);
    }
    return { run, ended: FINAL_STATES.includes(run.state) };
  }

  /** Appends a piece of a run's log at `seq` (null: after the last one). */
  async appendLog(runId: string, seq: number | null, text: string): Promise<void> {
    const data = storable(text);
    await this.db.insert(runLogChunks).values({
      runId,
      seq:
        seq ??
        sql`(select coalesce(max(${runLogChunks.seq}), -1) + 1 from ${runLogChunks} where ${runLogChunks.runId} = ${runId})`,
      data,
    });
  }

  /**
   * The log's pieces after `afterSeq` (-1: from the start), page by page: a long log is never one
   * string in memory.
   */
  async *logPieces(runId: string, afterSeq = -1): AsyncGenerator<LogPiece> {
    for (let last = afterSeq, pieces = await this.readLog(runId, last); pieces.length > 0;) {
      yield* pieces;
      last = pieces.at(-1)!.seq;
      pieces = await this.readLog(runId, last);
    }
  }

  /**
   * A run's log after `afterSeq`, then each piece as it is stored (perhaps by
   * another process's worker) until the run ends, said by a last `{ ended }`;
   * it stops early when `signal` aborts (the reader left).
   */
  async *followLog(actor: Actor, id: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<LogPiece | RunEnd> {
    for (let last = afterSeq; !signal.aborted; await sleep(FOLLOW_POLL_MS, undefined, { signal }).catch(() => {})) {
      // The state first: the pieces stored before it ended are all read below.
      const { state } = await this.get(actor, id);
      for await (const piece of this.logPieces(id, last)) {
        if (signal.aborted) return;
        yield piece;
        last = piece.seq;
      }
      if (FINAL_STATES.includes(state)) {
        yield { ended: state };
        return;
      }
    }
  }

  /** The log's pieces after `afterSeq` (-1: from the start), in order, at most `limit` of them. */
  readLog(runId: string, afterSeq = -1, limit = LOG_PAGE): Promise<LogPiece[]> {
    return this.db
      .select({ seq: runLogChunks.seq, data: runLogChunks.data })
      .from(runLogChunks)
      .where(and(eq(runLogChunks.runId, runId), gt(runLogChunks.seq, afterSeq)))
      .orderBy(asc(runLogChunks.seq))
      .limit(limit);
  }

  /** Where the newest applied run with the public URL `https://<host>` sends its requests, or null. */
  async webTargetOf(host: string): Promise<string | null> {
    const [row] = await this.db
      .select({ webTarget: runs.webTarget })
      .from(runs)
      .where(and(eq(runs.publicUrl, `https://${host}`), eq(runs.state, 'APPLIED')))
      .orderBy(desc(runs.finishedAt))
      .limit(1);
    return row?.webTarget ?? null;
  }
}

function scopeOf(actor: Actor): string | null {
  return actor.platformAdmin ? null : actor.orgId;
}
