import { eq } from 'drizzle-orm';
import type { ClusterIdentity } from '../clusters/identity.js';
import { NodeAccessError } from '../clusters/node-access.js';
import type { ClusterService } from '../clusters/service.js';
import type { Config } from '../../config/index.js';
import type { BlobStore } from '../../shared/blobs/blob-store.js';
import type { Database } from '../../shared/db/client.js';
import { replicaId } from '../../shared/db/lease.js';
import { stacks } from '../../shared/db/schema.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import { executeRun, type StopReason } from './execute.js';
import type { SandboxChooser } from './sandbox/choose.js';
import type { RunOutcome, RunRow, RunService, RunStopper } from './service.js';
import { findTool } from './tool.js';
import { readPackage } from '../stacks/package-blobs.js';
import { clusterContext, egressPolicy, toolEnvironment } from './run-context.js';

/**
 * Applies queued runs in this process: up to `TOLLGATE_RUN_WORKERS` at once,
 * each claimed so that no other process takes it. Every `pollMs` it renews
 * its claims (a dead process's runs fail once their lease passes), stops the
 * runs asked to cancel, fails runs whose worker died, and takes new ones.
 *
 * @example
 * const worker = new RunWorker({ db, runs, clusters, identity, sandboxes, config: config.runs, log });
 * worker.start();
 * await worker.stop();
 */
export class RunWorker implements RunStopper {
  /** This process's name on its claims. */
  readonly id = replicaId();
  private readonly active = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly deps: {
      db: Database;
      /** Where stacks' packages are (`stacks/package-blobs.ts`). */
      blobs: BlobStore;
      runs: RunService;
      clusters: ClusterService;
      identity: ClusterIdentity;
      sandboxes: SandboxChooser;
      config: Config['runs'];
      log: Logger;
      onEnded?: () => void;
    },
  ) {}

  start(): void {
    if (this.deps.config.workers === 0 || this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.deps.config.pollMs);
    this.timer.unref();
    void this.tick();
  }

  /** Looks for work now (a run was just queued here) instead of at the next poll. */
  poke(): void {
    if (this.timer && !this.stopped) void this.tick();
  }

  /** How long a run asked to stop may take to be recorded as ended, whatever its tool does. */
  get endsWithinMs(): number {
    const { killGraceMs, pollMs } = this.deps.config;
    return killGraceMs + RECORD_MS + 2 * pollMs + 1_000;
  }

  /** Stops a run this process is applying at once; false when it is not applying it. */
  cancelHere(runId: string): boolean {
    const entry = this.active.get(runId);
    entry?.controller.abort('cancel' satisfies StopReason);
    return entry !== undefined;
  }

  /**
   * Takes no more runs, stops the ones under way (they end FAILED: the gateway shut down), and
   * waits for them.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
    for (const { controller } of this.active.values()) controller.abort('shutdown' satisfies StopReason);
    await Promise.all([...this.active.values()].map((entry) => entry.done));
  }

  private tick(): Promise<void> {
    this.ticking ??= this.work()
      .catch((error: unknown) => this.deps.log.warn('the run worker could not reach the store', describeError(error)))
      .finally(() => (this.ticking = null));
    return this.ticking;
  }

  private async work(): Promise<void> {
    const { runs, config } = this.deps;
    // Renew first: a stall of this process (a long GC) must not make it fail its own runs.
    const { cancel, lost } = await runs.claims.renew(this.id, [...this.active.keys()], config.leaseMs);
    await runs.claims.failAbandoned(this.id, [...this.active.keys()]);
    for (const id of cancel) this.active.get(id)?.controller.abort('cancel' satisfies StopReason);
    for (const id of lost) this.active.get(id)?.controller.abort('lost' satisfies StopReason);
    const bin = findTool({ configured: config.tofuBin, pathList: config.searchPath });
    while (!this.stopped && bin && this.active.size < config.workers) {
      const run = await runs.claims.claim(this.id, config.leaseMs);
      if (!run) break;
      this.launch(run, bin);
    }
  }

  private launch(run: RunRow, bin: string): void {
    const controller = new AbortController();
    const timeout = setTimeout(() => controller.abort('timeout' satisfies StopReason), this.deps.config.timeoutMs);
    const applied = this.apply(run, bin, controller.signal);
    const deadline = stoppedWithin(controller.signal, this.deps.config.killGraceMs + RECORD_MS);
    const done = Promise.race([applied, deadline.outcome])
      .finally(() => deadline.cancel())
      .then((outcome) => this.deps.runs.claims.finish(this.id, run.id, outcome))
      .then((recorded) => {
        if (!recorded)
          this.deps.log.warn('a run ended after its claim was lost; its outcome was not recorded', { runId: run.id });
        this.deps.onEnded?.();
      })
      .catch((error: unknown) =>
        this.deps.log.error("a run's outcome could not be recorded; it fails when its claim expires", {
          runId: run.id,
          ...describeError(error),
        }),
      )
      .finally(() => {
        clearTimeout(timeout);
        this.active.delete(run.id);
        this.poke();
      });
    this.active.set(run.id, { controller, done });
  }

  private async apply(run: RunRow, bin: string, signal: AbortSignal): Promise<RunOutcome> {
    const { db, blobs, runs, clusters, identity, sandboxes, config, log } = this.deps;
    const fail = (failure: string): RunOutcome => ({
      state: 'FAILED',
      exitCode: null,
      failure,
      outputs: null,
      publicUrl: null,
      webTarget: null,
    });
    const stackId = run.stackId ?? '';
    // By id: a stack added since under the same name is another stack, with its own state.
    const [stack] = await db
      .select({ id: stacks.id, packageBlobId: stacks.packageBlobId, root: stacks.root, sha: stacks.packageSha256 })
      .from(stacks)
      .where(eq(stacks.id, stackId));
    // Read from the blob store as a stream, whole only here (the zip reader needs it all).
    const zip = stack && stack.sha === run.packageSha256 ? await readPackage(db, blobs, stack) : null;
    if (!stack || !zip) {
      await runs.appendLog(
        run.id,
        null,
        `[tollgate] Stack ${run.stackName} was deleted or replaced after this run was queued.\n`,
      );
      return fail(`Stack ${run.stackName} was deleted or replaced after this run was queued.`);
    }
    const { cluster, nodes } = await clusters.get(run.clusterId, null);
    if (cluster.state !== 'running') return fail(`Cluster ${cluster.id} was deleted before the run started.`);
    const sandbox = await sandboxes.get();
    if (typeof sandbox === 'string') {
      log.error('a run could not start: no sandbox', { runId: run.id, reason: sandbox });
      return fail(
        'This gateway can no longer isolate runs, so the run was not started; ask the operator (TOLLGATE_RUN_SANDBOX).',
      );
    }
    let key: { publicKey: string; privateKey: string };
    try {
      key = await identity.keyOf(cluster.id);
    } catch (error) {
      if (!(error instanceof NodeAccessError)) throw error;
      log.error("a run could not start: the cluster's key cannot be opened", { runId: run.id, reason: error.message });
      return fail(`${error.message} Ask the operator.`);
    }
    return executeRun({
      run,
      zip,
      root: stack.root,
      context: clusterContext(run, cluster, nodes, sandbox.sshProxy, key),
      state: await runs.stackStates.load(cluster.id, stackId),
      bin,
      workDir: config.workDir,
      env: toolEnvironment(config),
      sandbox,
      egress: egressPolicy(nodes, config.egress),
      bounds: config.bounds,
      produced: config.produced,
      killGraceMs: config.killGraceMs,
      timeoutMs: config.timeoutMs,
      signal,
      storeLog: (seq, text) => runs.appendLog(run.id, seq, text),
      saveState: (state) => runs.stackStates.save(cluster.id, stackId, state),
      log,
    });
  }
}

/** After the kill grace, how long a stopped run has to release its sandbox and record how it ended. */
export const RECORD_MS = 5000;

/**
 * The outcome a stopped run is recorded with when its sandbox, its tool or
 * its store has not let it end within `withinMs` of the stop (a hung read, a
 * Docker engine that does not answer): the run is final on time with its
 * reason, and what is left of it ends in the background.
 */
function stoppedWithin(signal: AbortSignal, withinMs: number): { outcome: Promise<RunOutcome>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let onAbort = () => {};
  const outcome = new Promise<RunOutcome>((resolve) => {
    onAbort = () => {
      timer = setTimeout(
        () =>
          resolve({
            state: signal.reason === 'cancel' ? 'CANCELED' : 'FAILED',
            exitCode: null,
            failure: stoppedReason(signal.reason as StopReason, withinMs),
            outputs: null,
            publicUrl: null,
            webTarget: null,
          }),
        withinMs,
      );
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return {
    outcome,
    cancel: () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    },
  };
}

function stoppedReason(reason: StopReason, withinMs: number): string {
  const why = {
    cancel: 'It was canceled',
    timeout: 'It ran longer than its timeout (TOLLGATE_RUN_TIMEOUT_SECONDS)',
    shutdown: 'The gateway applying it shut down',
    lost: 'Its worker lost its claim on it',
  }[reason];
  return `${why} and did not stop within ${Math.round(withinMs / 1000)} s after being stopped; it is recorded as ended, and the cluster may be partly changed.`;
}
