import { StoreTimeoutError, withinStoreTimeout } from '../db/timeout.js';
import type { Logger } from '../http/log.js';
import type { ChargeRecord, WalletService } from './wallet.js';

type Item = { record: ChargeRecord; release?: undefined; done: (error?: unknown) => void } | { record?: undefined; release: string; done: (error?: unknown) => void };

/**
 * Group commit for the end of requests: charges (which also let go of the
 * request's hold) and releases of holds of requests that used nothing.
 * Requests that finish while a commit is under way wait for the next one,
 * which writes all of them in one transaction; each request still waits for
 * its own write to be committed before its response completes. Under load
 * this turns N transactions into about one per round trip to the store. A
 * commit the store does not confirm within STORE_TIMEOUT_MS fails (the caller
 * spools it; writes are keyed by request id, so a late commit is not doubled).
 *
 * @example
 * const writer = new ChargeWriter(wallets, log);
 * await writer.write(record);        // resolves once the charge is committed
 * await writer.release('req_…');     // a request that failed before using anything
 */
export class ChargeWriter {
  private queue: Item[] = [];
  private flushing = false;

  constructor(
    private readonly wallets: WalletService,
    private readonly log: Logger,
    private readonly maxBatch = 500,
  ) {}

  write(record: ChargeRecord): Promise<void> {
    return this.enqueue((done) => ({ record, done }));
  }

  release(requestId: string): Promise<void> {
    return this.enqueue((done) => ({ release: requestId, done }));
  }

  private enqueue(item: (done: (error?: unknown) => void) => Item): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push(item((error) => (error === undefined ? resolve() : reject(error))));
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        await this.commit(batch);
        for (const item of batch) item.done();
      } catch (error) {
        // A store that does not answer fails the whole batch at once (to the spool); trying
        // each item again would hold the next requests for STORE_TIMEOUT_MS per item.
        if (batch.length === 1 || error instanceof StoreTimeoutError) {
          for (const item of batch) item.done(error);
          continue;
        }
        // One bad record must not fail its neighbours: write them one by one.
        this.log.debug('batched charge failed; retrying one by one', { count: batch.length });
        for (const item of batch) {
          await this.commit([item]).then(
            () => item.done(),
            (e: unknown) => item.done(e ?? new Error('charge failed')),
          );
        }
      }
    }
    this.flushing = false;
  }

  private commit(batch: Item[]): Promise<unknown> {
    const records = batch.flatMap((item) => (item.record ? [item.record] : []));
    const releases = batch.flatMap((item) => (item.release ? [item.release] : []));
    return withinStoreTimeout(this.wallets.chargeMany(records, releases));
  }
}
