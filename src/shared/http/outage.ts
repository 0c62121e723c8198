import { describeError, type Logger } from './log.js';

/**
 * Logs a dependency's outage once when it starts and once when it ends,
 * however many requests fail in between (those are logged at debug level
 * by their callers): a 10-second cut is two lines, not thousands.
 *
 * @example
 * const storeOutage = new OutageLog(log, 'database', 'charges wait in the journal');
 * const startedAt = Date.now();
 * try { await query(); storeOutage.succeeded(); } catch (error) { storeOutage.failed(error, startedAt); throw error; }
 */
export class OutageLog {
  private down = false;
  /** When the last outage ended (ms since the epoch). */
  private upSince = 0;

  constructor(
    private readonly log: Logger,
    private readonly what: string,
    private readonly meanwhile: string,
  ) {}

  get isDown(): boolean {
    return this.down;
  }

  /**
   * An attempt that began at `startedAt` failed. One that began before the
   * last recovery says nothing new (a query stuck in the outage, failing just
   * after another got through), so it does not start another outage.
   */
  failed(error: unknown, startedAt: number): void {
    if (this.down || startedAt < this.upSince) return;
    this.down = true;
    this.log.error(`${this.what} unreachable: ${this.meanwhile}`, describeError(error));
  }

  succeeded(): void {
    if (!this.down) return;
    this.down = false;
    this.upSince = Date.now();
    this.log.warn(`${this.what} reachable again`, {});
  }
}
