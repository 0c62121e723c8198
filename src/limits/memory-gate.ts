import type { Admission, AdmissionGate, AdmitRequest, LiveRequest, Release, Reported, WalletState } from './gate.js';

export interface MemoryGateOptions {
  concurrencyLeaseMs: number;
  holdLeaseMs: number;
  /** The clock, for tests. */
  now?: () => number;
}

interface Counter {
  value: number;
  expiresAt: number;
}

interface Wallet {
  /** The spendable amount; null until rebuilt from PostgreSQL. */
  spendable: bigint | null;
  version: number;
  holds: Map<string, { amount: bigint; expiresAt: number }>;
  unwritten: Map<string, bigint>;
}

const MINUTE_MS = 60_000;

/**
 * The admission gate of the embedded default (no Redis): the same rules as
 * `redis-gate.ts`, in this process's memory, for one gateway process. Each
 * call runs to completion before any other starts (no await inside), which
 * is what makes it atomic.
 *
 * @example
 * const gate = createMemoryGate({ concurrencyLeaseMs: 30_000, holdLeaseMs: 60_000 });
 */
export function createMemoryGate(options: MemoryGateOptions): AdmissionGate {
  const now = options.now ?? Date.now;
  const counters = new Map<string, Counter>();
  const slots = new Map<string, Map<string, number>>();
  const wallets = new Map<string, Wallet>();

  const read = (name: string): Counter | undefined => {
    const counter = counters.get(name);
    if (counter && counter.expiresAt <= now()) {
      counters.delete(name);
      return undefined;
    }
    return counter;
  };
  const add = (name: string, amount: number, ttlMs: number) => {
    const counter = read(name);
    if (counter) counter.value += amount;
    else counters.set(name, { value: amount, expiresAt: now() + ttlMs });
  };
  const walletOf = (orgId: string): Wallet => {
    let wallet = wallets.get(orgId);
    if (!wallet) {
      wallet = { spendable: null, version: 0, holds: new Map(), unwritten: new Map() };
      wallets.set(orgId, wallet);
    }
    return wallet;
  };
  const slotsOf = (keyId: string) => {
    let held = slots.get(keyId);
    if (!held) {
      held = new Map();
      slots.set(keyId, held);
    }
    for (const [id, expiresAt] of held) if (expiresAt <= now()) held.delete(id);
    return held;
  };

  return {
    async admit(request: AdmitRequest): Promise<Admission> {
      const wallet = request.holdNanos === null ? null : walletOf(request.orgId);
      if (wallet) {
        if (wallet.spendable === null) return { outcome: 'wallet_unknown' };
        if (wallet.spendable <= 0n) return { outcome: 'insufficient_funds' };
      }
      let requests = { used: 0, resetMs: 0 };
      let tokens: { used: number; resetMs: number } | null = null;
      const { limits } = request;
      if (limits) {
        const rpm = read(`rpm:${request.keyId}`);
        requests = { used: (rpm?.value ?? 0) + 1, resetMs: rpm ? rpm.expiresAt - now() : MINUTE_MS };
        if (requests.used > limits.requestsPerMinute) return { outcome: 'rate_limit_exceeded', requests };
        const held = slotsOf(request.keyId);
        if (held.size >= limits.maxConcurrency) return { outcome: 'concurrency_limit_exceeded', inFlight: held.size, requests };
        if (limits.tokensPerMinute !== null) {
          const tpm = read(`tpm:${request.keyId}`);
          tokens = { used: (tpm?.value ?? 0) + request.estimatedTokens, resetMs: tpm ? tpm.expiresAt - now() : MINUTE_MS };
          if (tokens.used > limits.tokensPerMinute) return { outcome: 'tokens_limit_exceeded', tokens, requests };
        }
        if (limits.monthlyTokens !== null) {
          const month = read(`month:${request.keyId}:${request.month}`);
          if (!month) return { outcome: 'month_unknown' };
          if (month.value + request.estimatedTokens > limits.monthlyTokens) return { outcome: 'monthly_quota_exceeded', used: month.value, requests };
        }
        add(`rpm:${request.keyId}`, 1, MINUTE_MS);
        held.set(request.requestId, now() + options.concurrencyLeaseMs);
        if (limits.tokensPerMinute !== null) add(`tpm:${request.keyId}`, request.estimatedTokens, MINUTE_MS);
        if (limits.monthlyTokens !== null) add(`month:${request.keyId}:${request.month}`, request.estimatedTokens, 0);
      }
      if (wallet && request.holdNanos !== null) {
        wallet.spendable! -= request.holdNanos;
        wallet.version += 1;
        wallet.holds.set(request.requestId, { amount: request.holdNanos, expiresAt: now() + options.holdLeaseMs });
      }
      return { outcome: 'admitted', requests, tokens, tokensWindowEndsAt: now() + (tokens?.resetMs ?? 0) };
    },

    async release(release: Release) {
      slots.get(release.keyId)?.delete(release.requestId);
      const delta = release.tokenDelta;
      if (delta !== 0) {
        const tpm = release.limits?.tokensPerMinute != null ? read(`tpm:${release.keyId}`) : undefined;
        if (tpm && (delta > 0 || now() < release.tokensWindowEndsAt)) tpm.value += delta;
        const month = release.limits?.monthlyTokens != null ? read(`month:${release.keyId}:${release.month}`) : undefined;
        if (month) month.value += delta;
      }
      if (!release.held && release.cost === null) return;
      const wallet = walletOf(release.orgId);
      const hold = wallet.holds.get(release.requestId);
      if (hold) {
        wallet.holds.delete(release.requestId);
        if (wallet.spendable !== null) wallet.spendable += hold.amount;
      }
      if (release.cost !== null) {
        if (wallet.spendable !== null) wallet.spendable -= release.cost;
        wallet.unwritten.set(release.requestId, release.cost);
      }
      wallet.version += 1;
    },

    async seedMonth(keyId, month, tokens) {
      // Kept for the month (a counter's expiry only bounds memory; 0 would expire it at once).
      if (!read(`month:${keyId}:${month}`)) counters.set(`month:${keyId}:${month}`, { value: tokens, expiresAt: now() + 32 * 24 * 3600 * 1000 });
    },

    async walletState(orgId): Promise<WalletState> {
      const wallet = walletOf(orgId);
      return {
        version: String(wallet.version),
        holds: [...wallet.holds].map(([requestId, hold]) => ({ orgId, requestId, amount: hold.amount })),
        unwritten: [...wallet.unwritten].map(([requestId, amount]) => ({ orgId, requestId, amount })),
      };
    },

    async spendable(orgId) {
      return wallets.get(orgId)?.spendable ?? null;
    },

    async setWallet(orgId, spendable, version) {
      const wallet = walletOf(orgId);
      if (wallet.spendable !== null || String(wallet.version) !== version) return false;
      wallet.spendable = spendable;
      return true;
    },

    async credit(orgId, amount) {
      const wallet = walletOf(orgId);
      if (wallet.spendable !== null) wallet.spendable += amount;
      wallet.version += 1;
    },

    async forgetWallet(orgId) {
      const wallet = walletOf(orgId);
      wallet.spendable = null;
      wallet.version += 1;
    },

    async written(charges: Reported[]) {
      for (const charge of charges) wallets.get(charge.orgId)?.unwritten.delete(charge.requestId);
    },

    async heartbeat(live: LiveRequest[]) {
      const at = now();
      for (const request of live) {
        const hold = wallets.get(request.orgId)?.holds.get(request.requestId);
        if (hold) hold.expiresAt = at + options.holdLeaseMs;
        const slot = slots.get(request.keyId);
        if (slot?.has(request.requestId)) slot.set(request.requestId, at + options.concurrencyLeaseMs);
      }
      // Nothing in this process outlives it, so nothing expires here but what a bug forgot; give it back all the same.
      for (const wallet of wallets.values()) {
        for (const [requestId, hold] of wallet.holds) {
          if (hold.expiresAt > at) continue;
          wallet.holds.delete(requestId);
          if (wallet.spendable !== null) wallet.spendable += hold.amount;
          wallet.version += 1;
        }
      }
      return false;
    },

    async report(holds, unwritten) {
      // Never needed for a loss (memory lives as long as the process), but kept to the same rules as Redis.
      for (const hold of holds) {
        const wallet = walletOf(hold.orgId);
        wallet.holds.set(hold.requestId, { amount: hold.amount, expiresAt: now() + options.holdLeaseMs });
        wallet.version += 1;
      }
      for (const charge of unwritten) {
        const wallet = walletOf(charge.orgId);
        wallet.unwritten.set(charge.requestId, charge.amount);
        wallet.version += 1;
      }
    },
  };
}
