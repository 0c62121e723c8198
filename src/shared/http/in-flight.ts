/**
 * Counts the billed calls under way (from their hold to their charge), so a
 * gateway that is shutting down knows when everything it served is billed,
 * and whether it is draining (then `/health` answers 503).
 *
 * @example
 * const finish = inFlight.begin();
 * try { await serve(); } finally { finish(); }
 * await inFlight.idle(25_000); // true once nothing is under way
 */
export class InFlight {
  private count = 0;
  private waiters: Array<() => void> = [];
  /** Set when shutdown begins: load balancers should send no more requests. */
  draining = false;

  get size(): number {
    return this.count;
  }

  /** Marks one call as started; the returned function ends it (a second call does nothing). */
  begin(): () => void {
    this.count += 1;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.count -= 1;
      if (this.count === 0) for (const wake of this.waiters.splice(0)) wake();
    };
  }

  /** Resolves true once nothing is under way, or false after `timeoutMs`. */
  idle(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(wake);
    });
  }
}
