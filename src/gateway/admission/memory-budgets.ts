import type { Admission } from './gate.js';
import type { BudgetState, Reported } from './gate-state.js';
import type { BudgetLimit, BudgetScope, Budgets } from './budgets.js';
import { budgetLimitName, heldTag, parseTag, VERSION_TTL_MS } from './budgets.js';
import { budgetRefusal } from '../billing/budget-rule.js';

interface Count {
  /** Charges and holds; null until rebuilt (or once its window's time to live ran out). */
  spent: bigint | null;
  version: number;
  expiresAt: number;
}

/**
 * The memory gate's budget counts (`memory-gate.ts`), by the same rules as the Redis gate's
 * scripts: a count exists once rebuilt, a hold is taken from every budget a request is admitted
 * against, and a request's tag, kept from its admission until its charge is written, says which
 * counts its end moves.
 */
export class MemoryBudgets {
  private readonly counts = new Map<string, Count>();
  /**
   * Request → its tag, from admission until its charge is written (or its hold expires with no
   * charge).
   */
  private readonly tags = new Map<string, string>();
  /** Budgets as last set (`setLimits`), by `budgetLimitName`: null is none. */
  private readonly limits = new Map<string, { value: bigint | null; expiresAt: number }>();

  constructor(private readonly now: () => number) {}

  /**
   * Checks that `hold` fits in every budget that has a limit; null when it does (nothing taken
   * yet), else the refusal.
   */
  check(budgets: BudgetLimit[], hold: bigint): Admission | null {
    for (let index = 0; index < budgets.length; index++) {
      const budget = budgets[index]!;
      const limit = this.limitOf(budget);
      if (limit === null) continue;
      const refusal = budgetRefusal(this.read(budget.counter)?.spent ?? null, hold, limit);
      if (refusal) return { ...refusal, index };
    }
    return null;
  }

  /**
   * Takes `hold` from every budget that has a limit and keeps the request's tag (returned); called
   * once every check has passed, in the same step.
   */
  take(requestId: string, budgets: BudgetLimit[], hold: bigint): string {
    const held = budgets.map((budget) => this.limitOf(budget) !== null);
    budgets.forEach((budget, index) => {
      if (held[index]) this.read(budget.counter)!.spent! += hold;
    });
    const tag = heldTag(budgets, (index) => held[index]!);
    if (tag !== '') this.tags.set(requestId, tag);
    return tag;
  }

  /**
   * A key's or a project's budgets as just set, read in place of the replica's for `ttlMs`
   * (`LimitGate.setBudgets`).
   */
  setLimits(scope: BudgetScope, subjectId: string, budgets: Budgets, ttlMs: number): void {
    const expiresAt = this.now() + ttlMs;
    this.limits.set(budgetLimitName(scope, subjectId, 'month'), { value: budgets.monthly, expiresAt });
    this.limits.set(budgetLimitName(scope, subjectId, 'day'), { value: budgets.daily, expiresAt });
  }

  /** A budget's limit: as last set, while that is kept, else as the request's replica knows it. */
  private limitOf(budget: BudgetLimit): bigint | null {
    const set = this.limits.get(budget.limitName);
    return set && set.expiresAt > this.now() ? set.value : budget.limitNanos;
  }

  /**
   * A request ended: its hold (if still held) back to the counts it was taken from, its cost out of
   * every count.
   */
  release(requestId: string, hold: bigint | null, cost: bigint | null): void {
    const tag = this.tags.get(requestId);
    if (tag === undefined) return;
    for (const { counter, held } of parseTag(tag)) {
      const count = this.read(counter);
      if (count?.spent != null) {
        if (held && hold !== null) count.spent -= hold;
        if (cost !== null) count.spent += cost;
      } else this.moved(counter);
    }
    // Kept while the charge is not yet written: a rebuild adds it.
    if (cost === null) this.tags.delete(requestId);
  }

  /**
   * A hold that expired (its replica died): back to the counts it was taken from; no charge
   * follows.
   */
  expire(requestId: string, hold: bigint): void {
    this.release(requestId, hold, null);
  }

  /** Charges now in PostgreSQL: their tags are no longer needed. */
  written(charges: Reported[]): void {
    for (const charge of charges) this.tags.delete(charge.requestId);
  }

  /** Tags reported again (never needed in memory, kept to the Redis gate's rules). */
  report(items: Reported[]): void {
    for (const item of items) {
      if (!item.tag) continue;
      this.tags.set(item.requestId, item.tag);
      for (const { counter } of parseTag(item.tag)) this.moved(counter);
    }
  }

  state(
    orgId: string,
    counter: string,
    holds: Map<string, { amount: bigint }>,
    unwritten: Map<string, bigint>,
  ): BudgetState {
    const state: BudgetState = { version: String(this.read(counter)?.version ?? 0), holds: [], unwritten: [] };
    for (const [requestId, tag] of this.tags) {
      const tagged = parseTag(tag).find((t) => t.counter === counter);
      if (!tagged) continue;
      const hold = holds.get(requestId);
      if (hold && tagged.held) state.holds.push({ orgId, requestId, amount: hold.amount });
      const charge = unwritten.get(requestId);
      if (charge !== undefined) state.unwritten.push({ orgId, requestId, amount: charge });
    }
    return state;
  }

  set(counter: string, spent: bigint, version: string, ttlMs: number): boolean {
    const count = this.read(counter);
    if ((count && count.spent !== null) || String(count?.version ?? 0) !== version) return false;
    this.counts.set(counter, { spent, version: count?.version ?? 0, expiresAt: this.now() + ttlMs });
    return true;
  }

  forget(counter: string): void {
    const count = this.read(counter);
    if (count) count.spent = null;
    this.moved(counter);
  }

  spent(counter: string): bigint | null {
    return this.read(counter)?.spent ?? null;
  }

  /**
   * A count not yet rebuilt changed under a rebuild that may be reading it: its version moves, so
   * that rebuild is not kept.
   */
  private moved(counter: string): void {
    const count = this.read(counter);
    if (count) count.version += 1;
    else this.counts.set(counter, { spent: null, version: 1, expiresAt: this.now() + VERSION_TTL_MS });
  }

  /** A count, or undefined once its window's time to live ran out. */
  private read(counter: string): Count | undefined {
    const count = this.counts.get(counter);
    if (count && count.expiresAt <= this.now()) {
      this.counts.delete(counter);
      return undefined;
    }
    return count;
  }
}
