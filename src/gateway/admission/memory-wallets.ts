import type { Reported, WalletState } from './gate-state.js';

/** An organization's wallet in the memory gate. */
export interface Wallet {
  /** The spendable amount; null until rebuilt from PostgreSQL. */
  spendable: bigint | null;
  /** Moved by every change, so that a rebuild racing one is not kept. */
  version: number;
  holds: Map<string, { amount: bigint; expiresAt: number }>;
  unwritten: Map<string, bigint>;
}

/**
 * The memory gate's wallets (`memory-gate.ts`), by the same rules as the Redis gate's `wallet`,
 * `held` and `unwritten` keys: a spendable amount once rebuilt, the holds of requests in flight
 * with their leases' expiry, and the charges not yet known to be in PostgreSQL.
 */
export class MemoryWallets {
  private readonly wallets = new Map<string, Wallet>();

  constructor(
    private readonly now: () => number,
    private readonly holdLeaseMs: number,
  ) {}

  of(orgId: string): Wallet {
    const wallet = this.wallets.get(orgId) ?? { spendable: null, version: 0, holds: new Map(), unwritten: new Map() };
    this.wallets.set(orgId, wallet);
    return wallet;
  }

  /** Takes an admitted request's hold; called once every check has passed. */
  hold(wallet: Wallet, requestId: string, amount: bigint): void {
    wallet.spendable! -= amount;
    wallet.version += 1;
    wallet.holds.set(requestId, { amount, expiresAt: this.now() + this.holdLeaseMs });
  }

  /**
   * A request ended: its hold (if still held, returned) comes back and its cost (null: none) goes
   * out.
   */
  release(orgId: string, requestId: string, cost: bigint | null): bigint | null {
    const wallet = this.of(orgId);
    const hold = wallet.holds.get(requestId);
    if (hold) {
      wallet.holds.delete(requestId);
      if (wallet.spendable !== null) wallet.spendable += hold.amount;
    }
    if (cost !== null) {
      if (wallet.spendable !== null) wallet.spendable -= cost;
      wallet.unwritten.set(requestId, cost);
    }
    wallet.version += 1;
    return hold?.amount ?? null;
  }

  state(orgId: string): WalletState {
    const wallet = this.of(orgId);
    return {
      version: String(wallet.version),
      holds: [...wallet.holds].map(([requestId, hold]) => ({ orgId, requestId, amount: hold.amount })),
      unwritten: [...wallet.unwritten].map(([requestId, amount]) => ({ orgId, requestId, amount })),
    };
  }

  spendable(orgId: string): bigint | null {
    return this.wallets.get(orgId)?.spendable ?? null;
  }

  set(orgId: string, spendable: bigint, version: string): boolean {
    const wallet = this.of(orgId);
    if (wallet.spendable !== null || String(wallet.version) !== version) return false;
    wallet.spendable = spendable;
    return true;
  }

  credit(orgId: string, amount: bigint): void {
    const wallet = this.of(orgId);
    if (wallet.spendable !== null) wallet.spendable += amount;
    wallet.version += 1;
  }

  forget(orgId: string): void {
    const wallet = this.of(orgId);
    wallet.spendable = null;
    wallet.version += 1;
  }

  written(charges: Reported[]): void {
    for (const charge of charges) this.wallets.get(charge.orgId)?.unwritten.delete(charge.requestId);
  }

  /** Renews a running request's hold lease. */
  renew(orgId: string, requestId: string, at: number): void {
    const hold = this.wallets.get(orgId)?.holds.get(requestId);
    if (hold) hold.expiresAt = at + this.holdLeaseMs;
  }

  report(holds: Reported[], unwritten: Reported[]): void {
    for (const hold of holds) {
      const wallet = this.of(hold.orgId);
      wallet.holds.set(hold.requestId, { amount: hold.amount, expiresAt: this.now() + this.holdLeaseMs });
      wallet.version += 1;
    }
    for (const charge of unwritten) {
      const wallet = this.of(charge.orgId);
      wallet.unwritten.set(charge.requestId, charge.amount);
      wallet.version += 1;
    }
  }

  /** Gives back holds whose lease ran out, each passed to `expired` (for the budgets' counts). */
  giveBackExpired(at: number, expired: (requestId: string, amount: bigint) => void): void {
    for (const wallet of this.wallets.values()) {
      for (const [requestId, hold] of wallet.holds) {
        if (hold.expiresAt > at) continue;
        wallet.holds.delete(requestId);
        expired(requestId, hold.amount);
        if (wallet.spendable !== null) wallet.spendable += hold.amount;
        wallet.version += 1;
      }
    }
  }
}
