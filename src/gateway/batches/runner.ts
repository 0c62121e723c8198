import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { BlobStore } from '../../shared/blobs/blob-store.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import type { FileStore } from '../files/store.js';
import { CallAbort } from '../proxy/call-abort.js';
import type { BilledDeps } from '../requests/endpoint.js';
import type { BatchEvents } from './batch-metrics.js';
import { ingestLines } from './ingest.js';
import { dryLine, type RunnableLine, runLine } from './line-run.js';
import type { LineStore } from './line-store.js';
import type { BatchRow } from './objects.js';
import { writeResults } from './output.js';
import type { BatchStore } from './store.js';

/** What the runner reads: where batches, lines, files and bytes are, and its bounds. */
export interface RunnerParts {
  store: BatchStore;
  lines: LineStore;
  files: FileStore;
  blobs: BlobStore;
  log: Logger;
  settings: { concurrency: number; leaseMs: number };
}

/**
 * How long a line refused for now (its key's limits, a busy fleet: 429, 503) waits, and its batch
 * is not claimed from on this replica: else its lines are claimed and refused in a loop.
 */
const RETRY_MS = 1_000;

/** Why a batch's lines not yet run are failed, by how it ends. */
const STOPPED = {
  cancelled: { code: 'batch_cancelled', message: 'The batch was cancelled before this request ran.' },
  expired: { code: 'batch_expired', message: 'The batch expired before this request ran.' },
  dry: dryLine().error!,
};

/**
 * Runs batches on this replica, beside every other replica on the same database: each round it
 * renews its lines' leases (aborting those whose batch stopped), marks batches past their window,
 * fails the lines that will not run, reads one batch's input into lines, claims lines up to
 * TOLLGATE_BATCHES_CONCURRENCY (a dead replica's among them once their lease ran out: run again
 * under the same request id, so the ledger charges them once), and writes one finished batch's
 * results. A line's end claims the next at once.
 */
export class BatchRunner {
  /** This replica, as `claimed_by` names it. */
  readonly replica = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  /** The lines this replica runs, by `batch:line`: each one's batch and abort. */
  private readonly running = new Map<string, { batchId: string; line: number; abort: CallAbort }>();
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private filling = false;
  /** A line ended while claiming: claim again once this claim is done. */
  private refill = false;
  /** Batches whose lines were refused for now, by when this replica claims from them again. */
  private readonly resting = new Map<string, number>();
  private stopped = false;
  events: BatchEvents | null = null;

  constructor(private readonly parts: RunnerParts) {}

  /** How many lines this replica runs now. */
  get size(): number {
    return this.running.size;
  }

  /** Rounds every third of a lease (at most every half second), from now. */
  start(deps: BilledDeps): void {
    this.stopped = false;
    const every = Math.max(100, Math.min(500, Math.floor(this.parts.settings.leaseMs / 3)));
    this.timer = setInterval(() => void this.tick(deps), every);
    this.timer.unref();
    void this.tick(deps);
  }

  /**
   * Stops claiming. Lines under way end as they would (a draining gateway waits for their calls);
   * a line cut short by the process's end is another replica's once its lease runs out.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async tick(deps: BilledDeps): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    const { store, lines, log } = this.parts;
    try {
      const mine = [...this.running.values()];
      await lines.renew(this.replica, mine);
      const stopped = await store.stopped([...new Set(mine.map((run) => run.batchId))]);
      for (const run of mine) if (stopped.has(run.batchId)) run.abort.abort();
      await store.expireDue();
      for (const batch of await store.stopping()) {
        const why = batch.ending === 'completed' ? STOPPED.dry : STOPPED[batch.ending as 'cancelled' | 'expired'];
        const failed = await lines.failUnrun(batch.id, why ?? STOPPED.cancelled);
        if (failed > 0) this.events?.lineDone('failed', failed);
      }
      await this.validateOne();
      await this.fill(deps);
      await this.finalizeOne();
    } catch (error) {
      log.warn('batches: a round failed', describeError(error));
    } finally {
      this.ticking = false;
    }
  }

  /** Claims lines up to the concurrency and starts each. */
  private async fill(deps: BilledDeps): Promise<void> {
    if (this.filling) {
      this.refill = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.refill = false;
        if (this.stopped) return;
        const room = this.parts.settings.concurrency - this.running.size;
        const now = Date.now();
        for (const [batchId, until] of this.resting) if (until <= now) this.resting.delete(batchId);
        const claimed = await this.parts.lines.claim(this.replica, room, [...this.resting.keys()]);
        for (const line of claimed) this.run(deps, line);
      } while (this.refill);
    } finally {
      this.filling = false;
    }
  }

  private run(deps: BilledDeps, line: RunnableLine): void {
    const key = `${line.batchId}:${line.line}`;
    const abort = new CallAbort();
    this.running.set(key, { batchId: line.batchId, line: line.line, abort });
    void this.runOne(deps, line, abort)
      .catch((error: unknown) =>
        this.parts.log.error('a batch line failed', {
          batchId: line.batchId,
          line: line.line,
          ...describeError(error),
        }),
      )
      .finally(() => {
        this.running.delete(key);
        // On the next turn of the event loop: an embedded store answers without I/O, and a chain
        // of promises alone would never let a request in.
        setImmediate(() => void this.fill(deps).catch(() => {}));
      });
  }

  private async runOne(deps: BilledDeps, line: RunnableLine, abort: CallAbort): Promise<void> {
    const { store, lines } = this.parts;
    const batch = await store.byId(line.batchId);
    if (!batch) return;
    const outcome = await runLine(deps, batch, line, abort);
    if (outcome.kind === 'retry') {
      this.resting.set(line.batchId, Date.now() + RETRY_MS);
      await lines.release(line.batchId, line.line, this.replica, RETRY_MS);
      return;
    }
    if (outcome.kind === 'dry') await store.walletRanDry(batch.id);
    if (await lines.finish(line.batchId, line.line, this.replica, outcome.result))
      this.events?.lineDone(outcome.result.status);
  }

  /** Reads one validating batch's input file into its lines. */
  private async validateOne(): Promise<void> {
    const { store, lines, files } = this.parts;
    const batch = await store.claim(this.replica, ['validating']);
    if (!batch) return;
    const now = new Date();
    if (batch.ending === 'expired') {
      await store.update(batch.id, this.replica, { status: 'expired', expiredAt: now });
      return;
    }
    const input = await files.content({ orgId: batch.orgId, projectId: batch.projectId }, batch.inputFileId);
    if (!input) {
      const errors = [
        {
          code: 'invalid_file',
          message: 'The input file was deleted before the batch read it.',
          param: 'input_file_id',
          line: null,
        },
      ];
      await store.update(batch.id, this.replica, { status: 'failed', failedAt: now, errors: JSON.stringify(errors) });
      return;
    }
    const renew = async () => void (await store.renew(batch.id, this.replica));
    const total = await ingestLines(input.bytes, batch, lines, renew);
    await store.started(batch.id, this.replica, total);
  }

  /** Writes one finished batch's output and error files, and ends it. */
  private async finalizeOne(): Promise<void> {
    const { store, lines, files, blobs } = this.parts;
    const batch = await store.claimFinished(this.replica);
    if (!batch) return;
    const finalizingAt = batch.finalizingAt ?? new Date();
    if (batch.status === 'in_progress')
      await store.renewAs(batch.id, this.replica, { status: 'finalizing', finalizingAt });
    const results = await writeResults(batch, { lines, blobs, files });
    await store.update(batch.id, this.replica, { ...results, ...ended(batch) });
  }
}

/** The batch's last status and its time. */
function ended(batch: BatchRow): Partial<BatchRow> {
  const now = new Date();
  if (batch.ending === 'cancelled' || batch.status === 'cancelling') return { status: 'cancelled', cancelledAt: now };
  if (batch.ending === 'expired') return { status: 'expired', expiredAt: now };
  return { status: 'completed', completedAt: now };
}
