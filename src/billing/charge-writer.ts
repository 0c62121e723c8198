import type { Logger } from '../http/log.js';
import type { ChargeRecord, WalletService } from './wallet.js';

/**
 * Group commit for charges. Requests that finish while a commit is under way
 * wait for the next one, which writes all of them in one transaction; each
 * request still waits for its own charge to be committed before its response
 * completes. Under load this turns N transactions into about one per
 * round trip to the store, which keeps the store off the critical path.
 *
 * @example
 * const writer = new ChargeWriter(wallets, log);
 * await writer.write(record); // resolves once the charge is committed
 */
export class ChargeWriter {
  private queue: Array<{ record: ChargeRecord; done: (error?: unknown) => void }> = [];
  private flushing = false;

  constructor(
    private readonly wallets: WalletService,
    private readonly log: Logger,
    private readonly maxBatch = 500,
  ) {}

  write(record: ChargeRecord): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ record, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        await this.wallets.chargeMany(batch.map((item) => item.record));
        for (const item of batch) item.done();
      } catch (error) {
        if (batch.length === 1) {
          batch[0]!.done(error);
          continue;
        }
        // One bad record must not fail its neighbours: write them one by one.
        this.log.warn('batched charge failed; retrying one by one', { count: batch.length });
        for (const item of batch) {
          await this.wallets.chargeMany([item.record]).then(() => item.done(), (e: unknown) => item.done(e ?? new Error('charge failed')));
        }
      }
    }
    this.flushing = false;
  }
}
