interface Counter {
  value: number;
  expiresAt: number;
}

/**
 * The memory gate's counters (`memory-gate.ts`), each with an expiry, as Redis keeps them: one read
 * after its expiry drops it.
 */
export class MemoryCounters {
  private readonly counters = new Map<string, Counter>();

  constructor(private readonly now: () => number) {}

  /** A counter, or undefined once it expired (then it is dropped). */
  read(name: string): Counter | undefined {
    const counter = this.counters.get(name);
    if (counter && counter.expiresAt <= this.now()) {
      this.counters.delete(name);
      return undefined;
    }
    return counter;
  }

  /** Adds to a counter; a new one (none, or expired) expires `ttlMs` from now. */
  add(name: string, amount: number, ttlMs: number): void {
    const counter = this.read(name);
    if (counter) counter.value += amount;
    else this.counters.set(name, { value: amount, expiresAt: this.now() + ttlMs });
  }

  /** Sets a counter unless it has one already. */
  seed(name: string, value: number, ttlMs: number): void {
    if (!this.read(name)) this.counters.set(name, { value, expiresAt: this.now() + ttlMs });
  }
}
