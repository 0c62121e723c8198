import { describeError, type Logger } from './log.js';

/**
 * Logs a dependency's outage once when it starts and once when it ends,
 * however many requests fail in between (those are logged at debug level
 * by their callers): a 10-second cut is two lines, not thousands.
 *
 * @example
 * const storeOutage = new OutageLog(log, 'database', 'charges wait in the journal');
 * try { await query(); storeOutage.succeeded(); } catch (error) { storeOutage.failed(error); throw error; }
 */
export class OutageLog {
  private down = false;

  constructor(
    private readonly log: Logger,
    private readonly what: string,
    private readonly meanwhile: string,
  ) {}

  get isDown(): boolean {
    return this.down;
  }

  failed(error: unknown): void {
    if (this.down) return;
    this.down = true;
    this.log.error(`${this.what} unreachable: ${this.meanwhile}`, describeError(error));
  }

  succeeded(): void {
    if (!this.down) return;
    this.down = false;
    this.log.warn(`${this.what} reachable again`, {});
  }
}
