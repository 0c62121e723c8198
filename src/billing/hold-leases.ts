import { withinStoreTimeout } from '../db/timeout.js';
import { describeError, type Logger } from '../http/log.js';
import type { WalletService } from './wallet.js';

/**
 * Keeps the holds of this process's requests alive. A hold expires one lease
 * after it was taken or last renewed; while its request runs, this renews it
 * every third of a lease (all of the process's holds in one statement). A
 * gateway that dies stops renewing, so its holds expire within one lease and
 * are swept by any replica: a dead process's holds are given back within two
 * leases, not after the longest a request may run.
 *
 * @example
 * const leases = new HoldLeases(wallets, log, { leaseMs: 60_000, maxHoldMs: 660_000 });
 * const untrack = leases.track('req_…');   // after the hold is taken
 * untrack();                               // once the request is charged or released
 */
export class HoldLeases {
  /** Request id → until when it may be renewed (a request never runs past its upstream timeout). */
  private readonly held = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private failing = false;

  constructor(
    private readonly wallets: WalletService,
    private readonly log: Logger,
    private readonly options: { leaseMs: number; maxHoldMs: number },
  ) {
    this.timer = setInterval(() => void this.renew(), Math.max(100, Math.floor(options.leaseMs / 3)));
    this.timer.unref();
  }

  get leaseMs(): number {
    return this.options.leaseMs;
  }

  /** Starts renewing a request's hold; the returned function stops it. */
  track(requestId: string): () => void {
    this.held.set(requestId, Date.now() + this.options.maxHoldMs);
    return () => void this.held.delete(requestId);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async renew(): Promise<void> {
    const now = Date.now();
    for (const [requestId, until] of this.held) if (until < now) this.held.delete(requestId);
    if (this.held.size === 0) return;
    try {
      await withinStoreTimeout(this.wallets.renewHolds([...this.held.keys()], this.options.leaseMs));
      if (this.failing) this.log.info('wallet holds renewed again', {});
      this.failing = false;
    } catch (error) {
      // Logged once per outage: a hold not renewed in time expires, and its charge still settles the wallet exactly.
      if (!this.failing) this.log.warn('renewing wallet holds failed', describeError(error));
      this.failing = true;
    }
  }
}
