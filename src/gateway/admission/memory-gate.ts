import type { Admission, AdmitRequest, LimitGate, RateAnswer, RateRequest, RateTaken, Release } from './gate.js';
import type { BudgetState, LiveRequest, Reported, WalletState } from './gate-state.js';
import type { KeyLimits } from '../keys/service.js';
import type { BudgetScope, Budgets } from './budgets.js';
import { MemoryBudgets } from './memory-budgets.js';
import { MemoryCounters } from './memory-counters.js';
import { MemoryWallets } from './memory-wallets.js';

export interface MemoryGateOptions {
  concurrencyLeaseMs: number;
  holdLeaseMs: number;
  now?: () => number; // the clock, for tests
}

const MINUTE_MS = 60_000;
const MONTH_TTL_MS = 32 * 24 * 3600 * 1000; // a monthly count's expiry only bounds memory

/**
 * The limits gate of the embedded default (no Redis): the same rules as `redis-gate.ts`, in this
 * process's memory, for one gateway process. Each call runs to completion before any other starts
 * (no await inside): atomic.
 *
 * @example
 * const gate = createMemoryGate({ concurrencyLeaseMs: 30_000, holdLeaseMs: 60_000 });
 */
export function createMemoryGate(options: MemoryGateOptions): LimitGate {
  return new MemoryGate(options);
}

/**
 * `createMemoryGate`'s gate. Its state mirrors the Redis gate's keys: counters named `rpm:K`,
 * `tpm:K`, `month:K:YYYY-MM`; each key's concurrency slots; each organization's wallet (spendable
 * amount, version, holds, unwritten charges); budget counts (`memory-budgets.ts`). Methods are
 * `async` without an `await`, so that a throw is a rejection as in the Redis gate, and no other
 * call can interleave.
 */
class MemoryGate implements LimitGate {
  private readonly now: () => number;
  /** Counters by name; one read after its expiry is dropped, as Redis would have. */
  private readonly counters: MemoryCounters;
  /** Per key: the requests holding a concurrency slot, each with its slot's expiry. */
  private readonly slots = new Map<string, Map<string, number>>();
  private readonly wallets: MemoryWallets;
  private readonly budgets: MemoryBudgets;

  constructor(private readonly options: MemoryGateOptions) {
    this.now = options.now ?? Date.now;
    this.budgets = new MemoryBudgets(this.now);
    this.counters = new MemoryCounters(this.now);
    this.wallets = new MemoryWallets(this.now, options.holdLeaseMs);
  }

  async admit(request: AdmitRequest): Promise<Admission> {
    const wallet = request.holdNanos === null ? null : this.wallets.of(request.orgId);
    if (wallet) {
      if (wallet.spendable === null) return { outcome: 'wallet_unknown' };
      if (wallet.spendable <= 0n) return { outcome: 'insufficient_funds' };
    }
    let requests = { used: 0, resetMs: 0 };
    let tokens: { used: number; resetMs: number } | null = null;
    let budgetTag = '';
    const { limits } = request;
    if (limits) {
      // Everything is checked before anything is taken: a refused request takes nothing.
      if (!request.rateTaken) {
        const rate = this.checkRate(request.keyId, limits);
        if (rate.outcome !== 'admitted') return rate;
        requests = rate.requests;
      }
      if (limits.tokensPerMinute !== null) {
        const tpm = this.counters.read(`tpm:${request.keyId}`);
        tokens = {
          used: (tpm?.value ?? 0) + request.estimatedTokens,
          resetMs: tpm ? tpm.expiresAt - this.now() : MINUTE_MS,
        };
        if (tokens.used > limits.tokensPerMinute) return { outcome: 'tokens_limit_exceeded', tokens, requests };
      }
      if (limits.monthlyTokens !== null) {
        const month = this.counters.read(`month:${request.keyId}:${request.month}`);
        if (!month) return { outcome: 'month_unknown' };
        if (month.value + request.estimatedTokens > limits.monthlyTokens)
          return { outcome: 'monthly_quota_exceeded', used: month.value, requests };
      }
    }
    if (wallet && request.holdNanos !== null) {
      const overBudget = this.budgets.check(request.budgets, request.holdNanos);
      if (overBudget) return overBudget;
    }
    if (limits) {
      if (!request.rateTaken) this.takeRate(request.keyId, request.requestId);
      this.takeTokens(request, limits);
    }
    if (wallet && request.holdNanos !== null) {
      budgetTag = this.budgets.take(request.requestId, request.budgets, request.holdNanos);
      this.wallets.hold(wallet, request.requestId, request.holdNanos);
    }
    const tokensWindowEndsAt = this.now() + (tokens?.resetMs ?? 0);
    return { outcome: 'admitted', requests, tokens, tokensWindowEndsAt, budgetTag };
  }

  async admitRate(request: RateRequest): Promise<RateAnswer> {
    const rate = this.checkRate(request.keyId, request.limits);
    if (rate.outcome === 'admitted') this.takeRate(request.keyId, request.requestId);
    return rate;
  }

  async giveBackRate(taken: RateTaken): Promise<void> {
    this.slots.get(taken.keyId)?.delete(taken.requestId);
    const rpm = this.counters.read(`rpm:${taken.keyId}`);
    if (rpm && rpm.value > 0 && this.now() < taken.windowEndsAt) rpm.value -= 1;
  }

  async release(release: Release): Promise<void> {
    this.slots.get(release.keyId)?.delete(release.requestId);
    const delta = release.tokenDelta;
    if (delta !== 0) {
      const tpm = release.limits?.tokensPerMinute != null ? this.counters.read(`tpm:${release.keyId}`) : undefined;
      // A refund after the estimate's window ended would come out of the next window's count.
      if (tpm && (delta > 0 || this.now() < release.tokensWindowEndsAt)) tpm.value += delta;
      const month =
        release.limits?.monthlyTokens != null
          ? this.counters.read(`month:${release.keyId}:${release.month}`)
          : undefined;
      if (month) month.value += delta;
    }
    if (!release.held && release.cost === null) return;
    // The hold comes back and the cost goes out; a hold already gone (expired) gives nothing back.
    const hold = this.wallets.release(release.orgId, release.requestId, release.cost);
    this.budgets.release(release.requestId, hold, release.cost);
  }

  async seedMonth(_orgId: string, keyId: string, month: string, tokens: number): Promise<void> {
    this.counters.seed(`month:${keyId}:${month}`, tokens, MONTH_TTL_MS);
  }

  async walletState(orgId: string): Promise<WalletState> {
    return this.wallets.state(orgId);
  }

  async spendable(orgId: string): Promise<bigint | null> {
    return this.wallets.spendable(orgId);
  }

  async setWallet(orgId: string, spendable: bigint, version: string): Promise<boolean> {
    return this.wallets.set(orgId, spendable, version);
  }

  async credit(orgId: string, amount: bigint): Promise<void> {
    this.wallets.credit(orgId, amount);
  }

  async forgetWallet(orgId: string): Promise<void> {
    this.wallets.forget(orgId);
  }

  async written(charges: Reported[]): Promise<void> {
    this.budgets.written(charges);
    this.wallets.written(charges);
  }

  async heartbeat(live: LiveRequest[]): Promise<boolean> {
    const at = this.now();
    for (const request of live) {
      this.wallets.renew(request.orgId, request.requestId, at);
      const slot = this.slots.get(request.keyId);
      if (slot?.has(request.requestId)) slot.set(request.requestId, at + this.options.concurrencyLeaseMs);
    }
    // Holds whose lease ran out: only what a bug forgot, here, but as the Redis gate does for a
    // dead replica.
    this.wallets.giveBackExpired(at, (requestId, amount) => this.budgets.expire(requestId, amount));
    return false; // memory is never lost while the process lives
  }

  async report(holds: Reported[], unwritten: Reported[]): Promise<void> {
    // Never needed (memory lives as long as the process), but kept to the same rules as Redis.
    this.budgets.report([...holds, ...unwritten]);
    this.wallets.report(holds, unwritten);
  }

  async budgetState(orgId: string, counter: string): Promise<BudgetState> {
    const wallet = this.wallets.of(orgId);
    return this.budgets.state(orgId, counter, wallet.holds, wallet.unwritten);
  }

  async setBudgetSpent(_orgId: string, counter: string, spent: bigint, version: string, ttlMs: number) {
    return this.budgets.set(counter, spent, version, ttlMs);
  }

  async forgetBudget(_orgId: string, counter: string): Promise<void> {
    this.budgets.forget(counter);
  }

  async setBudgets(_orgId: string, scope: BudgetScope, subjectId: string, budgets: Budgets, ttlMs: number) {
    this.budgets.setLimits(scope, subjectId, budgets, ttlMs);
  }

  async budgetSpent(_orgId: string, counter: string): Promise<bigint | null> {
    return this.budgets.spent(counter);
  }

  /** A key's requests per minute and concurrency, checked (nothing taken). */
  private checkRate(keyId: string, limits: KeyLimits): RateAnswer {
    const rpm = this.counters.read(`rpm:${keyId}`);
    const requests = { used: (rpm?.value ?? 0) + 1, resetMs: rpm ? rpm.expiresAt - this.now() : MINUTE_MS };
    if (requests.used > limits.requestsPerMinute) return { outcome: 'rate_limit_exceeded', requests };
    const held = this.slotsOf(keyId);
    if (held.size >= limits.maxConcurrency)
      return { outcome: 'concurrency_limit_exceeded', inFlight: held.size, requests };
    return { outcome: 'admitted', requests, windowEndsAt: this.now() + requests.resetMs };
  }

  /** Takes a request's count and concurrency slot; called only once every check has passed. */
  private takeRate(keyId: string, requestId: string): void {
    this.counters.add(`rpm:${keyId}`, 1, MINUTE_MS);
    this.slotsOf(keyId).set(requestId, this.now() + this.options.concurrencyLeaseMs);
  }

  /**
   * Takes an admitted request's estimate from its key's token limits; called only once every check
   * has passed.
   */
  private takeTokens(request: AdmitRequest, limits: KeyLimits): void {
    if (limits.tokensPerMinute !== null) this.counters.add(`tpm:${request.keyId}`, request.estimatedTokens, MINUTE_MS);
    if (limits.monthlyTokens !== null)
      this.counters.add(`month:${request.keyId}:${request.month}`, request.estimatedTokens, 0);
  }

  /** A key's slots still leased (expired ones are dropped first). */
  private slotsOf(keyId: string): Map<string, number> {
    const held = this.slots.get(keyId) ?? new Map<string, number>();
    this.slots.set(keyId, held);
    for (const [id, expiresAt] of held) if (expiresAt <= this.now()) held.delete(id);
    return held;
  }
}
