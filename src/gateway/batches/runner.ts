import type { BlobStore } from '../../shared/blobs/blob-store.js';
import { replicaId } from '../../shared/db/lease.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import type { FileStore } from '../files/store.js';
import { CallAbort } from '../proxy/call-abort.js';
import type { BilledDeps } from '../requests/endpoint.js';
import type { BatchEvents } from './batch-metrics.js';
import { dryLine, type LineEndpoints, type RunnableLine, runLine } from './line-run.js';
import type { LineResult, LineStore } from './line-store.js';
import type { BatchRow } from './objects.js';
import { writeResults } from './output.js';
import type { BatchStore } from './store.js';
import { validateOne } from './validate.js';

/** What the runner reads: where batches, lines, files and bytes are, and its bounds. */
export interface RunnerParts {
  store: BatchStore;
  lines: LineStore;
  files: FileStore;
  blobs: BlobStore;
  log: Logger;
  settings: { concurrency: number; leaseMs: number; validatingSeconds: number };
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

/** A line whose run ended, its result not yet written: a result, or `retry` (given back). */
interface EndedLine {
  key: string;
  batchId: string;
  line: number;
  result: LineResult | 'retry';
  /** Writes of it that failed. */
  failures: number;
}

/** Writes of an ended line tried before it is left to its lease (run again, billed once). */
const WRITE_TRIES = 3;

/**
 * Runs batches on this replica, beside every other replica on the same database: each round it
 * renews its lines' leases (aborting those whose batch stopped), marks batches past their window,
 * fails the lines that will not run, reads one batch's input into lines, claims lines up to
 * TOLLGATE_BATCHES_CONCURRENCY (a dead replica's among them once their lease ran out: run again
 * under the same request id, so the ledger charges them once), and writes one finished batch's
 * results. A line's end is written, and the next lines claimed, on the next turn of the event
 * loop, with every other line that ended meanwhile: a statement for their results (a line stays
 * this replica's, its lease renewed, until it is written) and one claim for as many new lines.
 */
export class BatchRunner {
  /** This replica, as `claimed_by` names it. */
  readonly replica = replicaId();
  /** The lines this replica runs, by `batch:line`: each one's batch and abort. */
  private readonly running = new Map<string, { batchId: string; line: number; abort: CallAbort }>();
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private filling = false;
  /** A line ended while claiming: claim again once this claim is done. */
  private refill = false;
  /** Lines ended and not yet written, in the order they ended. */
  private ended: EndedLine[] = [];
  /** The batches of the lines running here, read once when their first line was claimed. */
  private readonly batchRows = new Map<string, BatchRow>();
  /** Batches whose lines were refused for now, by when this replica claims from them again. */
  private readonly resting = new Map<string, number>();
  private stopped = false;
  /** The protocol each batch endpoint's lines call, given by `start`. */
  private endpoints: LineEndpoints | null = null;
  events: BatchEvents | null = null;

  constructor(private readonly parts: RunnerParts) {}

  /** How many lines this replica runs now. */
  get size(): number {
    return this.running.size;
  }

  /** Rounds every third of a lease (at most every half second), from now. */
  start(deps: BilledDeps, endpoints: LineEndpoints): void {
    this.endpoints = endpoints;
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
      const held = new Set(mine.map((run) => run.batchId));
      for (const id of this.batchRows.keys()) if (!held.has(id)) this.batchRows.delete(id);
      await lines.renew(this.replica, mine);
      const stopped = await store.stopped([...held]);
      for (const run of mine) if (stopped.has(run.batchId)) run.abort.abort();
      await store.expireDue();
      for (const batch of await store.stopping()) {
        const why = batch.ending === 'completed' ? STOPPED.dry : STOPPED[batch.ending as 'cancelled' | 'expired'];
        const failed = await lines.failUnrun(batch.id, why ?? STOPPED.cancelled);
        if (failed > 0) this.events?.lineDone('failed', failed);
      }
      await validateOne(this.parts, this.replica);
      await this.fill(deps);
      await this.finalizeOne();
    } catch (error) {
      log.warn('batches: a round failed', describeError(error));
    } finally {
      this.ticking = false;
    }
  }

  /** Writes the lines that ended, then claims lines up to the concurrency and starts each. */
  private async fill(deps: BilledDeps): Promise<void> {
    if (this.filling) {
      this.refill = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.refill = false;
        // Even once stopped: a line under way ends as it would.
        await this.writeEnded();
        if (this.stopped) return;
        const room = this.parts.settings.concurrency - this.running.size;
        const now = Date.now();
        for (const [batchId, until] of this.resting) if (until <= now) this.resting.delete(batchId);
        const claimed = await this.parts.lines.claim(this.replica, room, [...this.resting.keys()]);
        const unread = [...new Set(claimed.map((line) => line.batchId))].filter((id) => !this.batchRows.has(id));
        for (const row of await this.parts.store.byIds(unread)) this.batchRows.set(row.id, row);
        for (const line of claimed) this.run(deps, line);
      } while (this.refill);
    } finally {
      this.filling = false;
    }
  }

  private run(deps: BilledDeps, line: RunnableLine): void {
    const key = `${line.batchId}:${line.line}`;
    const batch = this.batchRows.get(line.batchId);
    // Its batch is gone (and its lines with it).
    if (!batch) return;
    const abort = new CallAbort();
    this.running.set(key, { batchId: line.batchId, line: line.line, abort });
    void this.runOne(deps, batch, line, abort)
      .then(
        (result) => this.ended.push({ key, batchId: line.batchId, line: line.line, result, failures: 0 }),
        (error: unknown) => {
          // Its lease runs out: it is run again, under the same request id.
          this.running.delete(key);
          this.parts.log.error('a batch line failed', {
            batchId: line.batchId,
            line: line.line,
            ...describeError(error),
          });
        },
      )
      .finally(() => {
        // On the next turn of the event loop: an embedded store answers without I/O, and a chain
        // of promises alone would never let a request in.
        setImmediate(() => void this.fill(deps).catch(() => {}));
      });
  }

  /** One line's run: its result, or `retry`, its batch resting a while on this replica. */
  private async runOne(deps: BilledDeps, batch: BatchRow, line: RunnableLine, abort: CallAbort) {
    const outcome = await runLine(deps, this.endpoints!, batch, line, abort);
    if (outcome.kind === 'retry') {
      this.resting.set(line.batchId, Date.now() + RETRY_MS);
      return 'retry';
    }
    if (outcome.kind === 'dry') await this.parts.store.walletRanDry(batch.id);
    return outcome.result;
  }

  /**
   * Writes the lines that ended since the last write: each batch's results in one statement, and
   * those refused for now given back in another. A write that fails is tried again on the next
   * turn (written twice, a line counts once: only a running line of this replica's is written);
   * after WRITE_TRIES, its lines are left running with their leases, which run out: they are run
   * again under the same request ids, billed once.
   */
  private async writeEnded(): Promise<void> {
    if (this.ended.length === 0) return;
    const ended = this.ended;
    this.ended = [];
    const { lines, log } = this.parts;
    for (const [batchId, group] of byBatch(ended)) {
      const retry = group.filter((line) => line.result === 'retry').map((line) => line.line);
      const results = group.flatMap((line) =>
        line.result === 'retry' ? [] : [{ line: line.line, result: line.result }],
      );
      try {
        await lines.release(batchId, retry, this.replica, RETRY_MS);
        const written = await lines.finish(batchId, this.replica, results);
        if (written.done > 0) this.events?.lineDone('done', written.done);
        if (written.failed > 0) this.events?.lineDone('failed', written.failed);
        for (const line of group) this.running.delete(line.key);
      } catch (error) {
        log.warn('batches: lines that ended were not written', {
          batchId,
          lines: group.length,
          ...describeError(error),
        });
        for (const line of group) {
          line.failures += 1;
          if (line.failures < WRITE_TRIES) this.ended.push(line);
          else this.running.delete(line.key);
        }
      }
    }
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

/** Ended lines by their batch, in the order they ended. */
function byBatch(ended: EndedLine[]): Map<string, EndedLine[]> {
  const grouped = new Map<string, EndedLine[]>();
  for (const line of ended) {
    const group = grouped.get(line.batchId);
    if (group) group.push(line);
    else grouped.set(line.batchId, [line]);
  }
  return grouped;
}

/** The batch's last status and its time. */
function ended(batch: BatchRow): Partial<BatchRow> {
  const now = new Date();
  if (batch.ending === 'cancelled' || batch.status === 'cancelling') return { status: 'cancelled', cancelledAt: now };
  if (batch.ending === 'expired') return { status: 'expired', expiredAt: now };
  return { status: 'completed', completedAt: now };
}
