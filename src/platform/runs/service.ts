import { and, asc, count, desc, eq, gt, inArray, lt, ne, notInArray, or, sql } from 'drizzle-orm';
import type { ClusterService } from '../clusters/service.js';
import type { Database } from '../../shared/db/client.js';
import { newId } from '../../shared/db/ids.js';
import { type RunState, runLogChunks, runs, stackStates } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { Actor } from '../people/permissions.js';
import type { StackCatalog } from '../stacks/service.js';
import { checkInputs } from './inputs.js';
import { alreadyApplying, checkRunTarget } from './queue.js';
import { isUniqueViolation } from '../../shared/db/errors.js';
import { storable, storableValue } from './untrusted.js';

/** Log pieces read at once (each at most 64 Ki characters): a reader of a long log is answered page by page. */
const LOG_PAGE = 64;

export type RunRow = typeof runs.$inferSelect;

/** The states a run ends in; it never leaves one. */
export const FINAL_STATES: readonly RunState[] = ['APPLIED', 'FAILED', 'CANCELED'];

/** What asking to apply a stack takes: the stack, the target (the whole cluster, or one of its nodes), and the inputs. */
export interface RunRequest {
  clusterId: string;
  /** The stack's name, or its id. */
  stackName: string;
  nodeId?: string;
  inputs: Record<string, unknown>;
}

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
    /** Throws (503) when there is no OpenTofu or Terraform to apply with, or no sandbox to apply in: nothing is queued then. */
    private readonly requireRunner: () => Promise<void>,
  ) {}

  /** Checks the stack (visible to `actor`, applicable to the cluster's profile), the target and the inputs, then queues the run. */
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

  /** Takes the oldest queued run for `worker`, or null. Two workers never take the same run (`FOR UPDATE SKIP LOCKED`). */
  async claim(worker: string, leaseMs: number): Promise<RunRow | null> {
    const oldest = this.db
      .select({ id: runs.id })
      .from(runs)
      .where(eq(runs.state, 'QUEUED'))
      .orderBy(asc(runs.createdAt), asc(runs.id))
      .limit(1)
      .for('update', { skipLocked: true });
    const [row] = await this.db
      .update(runs)
      .set({ state: 'RUNNING', claimedBy: worker, startedAt: sql`now()`, leaseUntil: leaseEnd(leaseMs) })
      // `= (subquery)`, evaluated once: with `IN (subquery)` the planner may run it again per row and take several runs.
      .where(and(eq(runs.id, sql`(${oldest})`), eq(runs.state, 'QUEUED')))
      .returning();
    return row ?? null;
  }

  /** Renews `worker`'s claims; answers which of them were asked to cancel, and which it no longer holds. */
  async renew(worker: string, ids: string[], leaseMs: number): Promise<{ cancel: string[]; lost: string[] }> {
    if (ids.length === 0) return { cancel: [], lost: [] };
    const held = await this.db
      .update(runs)
      .set({ leaseUntil: leaseEnd(leaseMs) })
      .where(and(inArray(runs.id, ids), eq(runs.claimedBy, worker), eq(runs.state, 'RUNNING')))
      .returning({ id: runs.id, cancelRequestedAt: runs.cancelRequestedAt });
    const heldIds = new Set(held.map((row) => row.id));
    return {
      cancel: held.filter((row) => row.cancelRequestedAt !== null).map((row) => row.id),
      lost: ids.filter((id) => !heldIds.has(id)),
    };
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
      .where(and(eq(runs.state, 'RUNNING'), lt(runs.leaseUntil, sql`now()`), notOwnActive))
      .returning({ id: runs.id });
    for (const { id } of rows)
      await this.appendLog(id, null, '\n[tollgate] The worker applying this run stopped; the run FAILED.\n');
    return rows.map((row) => row.id);
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

  /** The log's pieces after `afterSeq` (-1: from the start), in order, at most `limit` of them. */
  readLog(runId: string, afterSeq = -1, limit = LOG_PAGE): Promise<Array<{ seq: number; data: string }>> {
    return this.db
      .select({ seq: runLogChunks.seq, data: runLogChunks.data })
      .from(runLogChunks)
      .where(and(eq(runLogChunks.runId, runId), gt(runLogChunks.seq, afterSeq)))
      .orderBy(asc(runLogChunks.seq))
      .limit(limit);
  }

  /** The stack's (by id: not another stack that had its name) OpenTofu state on the cluster from its last run, or null. */
  async loadState(clusterId: string, stackId: string): Promise<Buffer | null> {
    const [row] = await this.db
      .select({ state: stackStates.state })
      .from(stackStates)
      .where(and(eq(stackStates.clusterId, clusterId), eq(stackStates.stackId, stackId)));
    return row ? Buffer.from(row.state) : null;
  }

  async saveState(clusterId: string, stackId: string, state: Buffer): Promise<void> {
    await this.db
      .insert(stackStates)
      .values({ clusterId, stackId, state })
      .onConflictDoUpdate({
        target: [stackStates.clusterId, stackStates.stackId],
        set: { state, updatedAt: sql`now()` },
      });
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

function leaseEnd(leaseMs: number) {
  return sql`now() + make_interval(secs => ${leaseMs / 1000})`;
}
