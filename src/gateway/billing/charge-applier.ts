import { StoreTimeoutError, withinStoreTimeout } from '../../shared/db/timeout.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import type { OutageLog } from '../../shared/http/outage.js';
import type { ChargeJournal } from './journal.js';
import type { ChargeRecord } from './charge-writes.js';
import type { WalletService } from './wallet.js';

/**
 * How long charges gather before a transaction writes them. The charges are durable in the journal
 * already, so the wait only delays their showing in PostgreSQL; at one connection 50 ms (against
 * 10) cut PostgreSQL's CPU a request by 60 % and the gateway's by 60 to 100 µs (CONTRIBUTING.md,
 * "Measured on the request path").
 */
const GATHER_MS = 50;

export interface ChargeApplierOptions {
  /** How long charges gather before a transaction (default 50 ms). */
  gatherMs?: number;
  /** Most charges in one transaction. */
  maxBatch?: number;
  /** Wait before trying again after the database failed. */
  retryMs?: number;
  /** Told of charges once PostgreSQL holds them (the wallet in Redis forgets them then). */
  applied?(records: ChargeRecord[]): Promise<void>;
}

/**
 * Writes the journal's charges to PostgreSQL, off the request path, by group commit: charges gather
 * for 50 ms, and whatever arrived while one transaction ran goes into the next, so there is at most
 * about one transaction per 50 ms and round trip, whatever the request rate. A database that is
 * down is retried every `retryMs`; the charges wait in the journal meanwhile (and across a
 * restart). Writes are keyed by request id, so a charge written twice is charged once.
 *
 * @example
 * const applier = new ChargeApplier(journal, wallets, storeOutage, log);
 * applier.start();
 * await applier.settled(5_000); // at shutdown: everything written, or false
 */
export class ChargeApplier {
  private running = false;
  private stopped = false;
  private loop: Promise<void> | null = null;
  /** Ends the gather under way at once (set while the applier gathers). */
  private endGather: (() => void) | null = null;
  /** Readers waiting in `written`: while any does, charges do not gather. */
  private readersWaiting = 0;
  /** Told after each batch is marked written. */
  private readonly batchListeners = new Set<() => void>();

  constructor(
    private readonly journal: ChargeJournal,
    private readonly wallets: WalletService,
    private readonly storeOutage: OutageLog,
    private readonly log: Logger,
    private readonly options: ChargeApplierOptions = {},
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopped = false;
    this.loop = this.run();
  }

  /** Stops after the transaction under way (charges left wait in the journal). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.journal.wake();
    this.endGather?.();
    await this.loop;
    this.running = false;
  }

  /**
   * Waits until every journaled charge is in PostgreSQL, for at most `timeoutMs`; false if some are
   * still waiting. At shutdown.
   */
  async settled(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    this.endGather?.();
    while (this.journal.pendingCount > 0 && Date.now() < deadline) await sleep(20);
    return this.journal.pendingCount === 0;
  }

  /**
   * Read your writes: waits until the charges journaled before this call are
   * in PostgreSQL, for at most `timeoutMs` (false if some are still
   * waiting). Charges journaled after it are not waited for, so a read under
   * steady load does not wait for a moment with none pending; and the gather
   * is cut short, so a reader does not wait for it.
   */
  async written(timeoutMs: number): Promise<boolean> {
    const newest = this.journal.newestPending;
    if (newest === null) return true;
    const deadline = Date.now() + timeoutMs;
    this.readersWaiting += 1;
    this.endGather?.();
    try {
      while (this.journal.isPending(newest)) {
        const left = deadline - Date.now();
        if (left <= 0) return false;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            this.batchListeners.delete(done);
            resolve();
          };
          const timer = setTimeout(done, left);
          this.batchListeners.add(done);
        });
      }
      return true;
    } finally {
      this.readersWaiting -= 1;
    }
  }

  private async run(): Promise<void> {
    const maxBatch = this.options.maxBatch ?? 500;
    while (!this.stopped) {
      await this.journal.whenAppended();
      if (this.stopped) break;
      // Let a batch gather: one transaction for the charges of many milliseconds, not one per
      // request, which at low concurrency would cost the event loop a round trip's CPU per request.
      // Already durable: nothing waits.
      if (this.journal.pendingCount < maxBatch && this.readersWaiting === 0)
        await this.gather(this.options.gatherMs ?? GATHER_MS);
      const batch = this.journal.pending(maxBatch);
      if (batch.length === 0) continue;
      const startedAt = Date.now();
      try {
        const written = await this.write(batch);
        await this.journal.markApplied(written.map((record) => record.id));
        for (const listener of [...this.batchListeners]) listener();
        await this.options
          .applied?.(written)
          .catch((error: unknown) =>
            this.log.debug('could not tell the wallet of applied charges', describeError(error)),
          );
      } catch (error) {
        this.storeOutage.failed(error, startedAt);
        await sleep(this.options.retryMs ?? 1_000);
      }
    }
  }

  /** Sleeps `ms`, unless `endGather` is called first. */
  private gather(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.endGather?.(), ms).unref();
      this.endGather = () => {
        clearTimeout(timer);
        this.endGather = null;
        resolve();
      };
    });
  }

  /** Writes a batch; returns the charges that are now in PostgreSQL (or that it refuses for good). */
  private async write(batch: ChargeRecord[]): Promise<ChargeRecord[]> {
    try {
      await withinStoreTimeout(this.wallets.chargeMany(batch));
      this.storeOutage.succeeded();
      return batch;
    } catch (error) {
      if (batch.length === 1 || error instanceof StoreTimeoutError || !isRecordError(error)) throw error;
    }
    // One bad record must not hold back its neighbours: write them one by one.
    const written: ChargeRecord[] = [];
    for (const record of batch) {
      try {
        await withinStoreTimeout(this.wallets.chargeMany([record]));
        written.push(record);
      } catch (error) {
        if (!isRecordError(error)) throw error;
        // The database refuses this record itself (not an outage): retrying cannot help. The line
        // carries what billing it by hand needs.
        this.log.error('charge refused by the database: bill it by hand', {
          ...record,
          requestData: undefined,
          cost: record.cost.toString(),
          ...describeError(error),
        });
        written.push(record);
      }
    }
    this.storeOutage.succeeded();
    return written;
  }
}

/**
 * An error about the data (SQLSTATE classes 22 and 23: bad value, broken constraint), not about
 * reaching the database.
 */
function isRecordError(error: unknown): boolean {
  const code =
    (error as { code?: unknown; cause?: { code?: unknown } }).code ??
    (error as { cause?: { code?: unknown } }).cause?.code;
  return typeof code === 'string' && /^2[23]/.test(code);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
