import type { WalletService } from '../billing/wallet.js';
import type { Logger } from '../../shared/http/log.js';
import type { BudgetLimit, BudgetScope } from './budgets.js';
import type { LimitGate } from './gate.js';

/**
 * A budget's window, read from the usage records: the charges written in it, and which of
 * `requestIds` are written.
 */
export type BudgetSpendReader = (
  scope: BudgetScope,
  subjectId: string,
  window: { from: Date; to: Date },
  requestIds: string[],
) => Promise<{ spent: bigint; written: Set<string> }>;

/**
 * A budget count is kept a day past its window, so a request that ends just after it still finds
 * it.
 */
const BUDGET_TTL_MARGIN_MS = 86_400_000;

/**
 * An organization's spendable amount, from one PostgreSQL snapshot: its
 * balance, less the charges the gate knows of that the balance does not yet
 * hold, less the holds of requests in flight. Kept only if the gate's state
 * did not change meanwhile; tried again otherwise.
 */
export async function rebuildWallet(
  gate: LimitGate,
  wallets: WalletService,
  log: Logger,
  orgId: string,
): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    // A rebuild not kept: another replica's may have been.
    if (attempt > 0 && (await gate.spendable(orgId)) !== null) return;
    const state = await gate.walletState(orgId);
    const unwritten = state.unwritten.map((c) => c.requestId);
    const { balance, written } = await wallets.walletSnapshot(orgId, unwritten);
    let spendable = balance;
    for (const hold of state.holds) spendable -= hold.amount;
    for (const charge of state.unwritten) if (!written.has(charge.requestId)) spendable -= charge.amount;
    if (await gate.setWallet(orgId, spendable, state.version)) {
      log.info('wallet spendable amount rebuilt from the ledger', {
        orgId,
        holds: state.holds.length,
        unwritten: state.unwritten.length - written.size,
      });
      return;
    }
  }
}

/**
 * A budget's count for its window, as the wallet's is rebuilt: the charges in the usage records
 * since the window began, plus the holds taken from it, plus its charges not yet written there.
 * Kept only if the gate's state for it did not change meanwhile; tried again otherwise.
 */
export async function rebuildBudget(
  gate: LimitGate,
  read: BudgetSpendReader,
  log: Logger,
  orgId: string,
  budget: BudgetLimit,
): Promise<void> {
  const window = { from: new Date(budget.startsAt), to: new Date(budget.endsAt) };
  for (let attempt = 0; attempt < 5; attempt++) {
    if (attempt > 0 && (await gate.budgetSpent(orgId, budget.counter)) !== null) return;
    const state = await gate.budgetState(orgId, budget.counter);
    const unwritten = state.unwritten.map((c) => c.requestId);
    const { spent: recorded, written } = await read(budget.scope, budget.subjectId, window, unwritten);
    let spent = recorded;
    for (const hold of state.holds) spent += hold.amount;
    for (const charge of state.unwritten) if (!written.has(charge.requestId)) spent += charge.amount;
    const ttlMs = budget.endsAt - Date.now() + BUDGET_TTL_MARGIN_MS;
    if (await gate.setBudgetSpent(orgId, budget.counter, spent, state.version, ttlMs)) {
      log.info('budget spend rebuilt from the usage records', { counter: budget.counter, holds: state.holds.length });
      return;
    }
  }
}

/** What `Rebuilds` reads from: the gate, the books, and this replica's report of what it holds. */
export interface RebuildSources {
  gate: LimitGate;
  wallets: WalletService;
  log: Logger;
  budgetSpend: BudgetSpendReader;
  /** A key's tokens this month from the usage records. */
  monthToDate(keyId: string, monthStart: Date): Promise<number>;
  /**
   * A heartbeat now: if the gate lost its state, this replica's holds and unwritten charges are in
   * it after.
   */
  reported(): Promise<void>;
}

/**
 * The gate's counts an admission found missing, rebuilt from PostgreSQL: one rebuild per subject at
 * a time (an organization's wallet, a budget's count, a key's month), which every admission that
 * finds it missing waits on, so a Redis that lost everything costs one read of the books per
 * subject, not one per request.
 *
 * @example
 * await rebuilds.wallet('org_1');
 */
export class Rebuilds {
  private readonly running = new Map<string, Promise<void>>();

  constructor(private readonly from: RebuildSources) {}

  wallet(orgId: string): Promise<void> {
    const { gate, wallets, log } = this.from;
    return this.once(`wallet:${orgId}`, async () => {
      // This replica's holds first: a wallet rebuilt without them would hand their money out again.
      await this.from.reported();
      await rebuildWallet(gate, wallets, log, orgId);
    });
  }

  budget(orgId: string, budget: BudgetLimit): Promise<void> {
    const { gate, budgetSpend, log } = this.from;
    return this.once(budget.counter, async () => {
      await this.from.reported();
      await rebuildBudget(gate, budgetSpend, log, orgId, budget);
    });
  }

  /** A key's tokens this month (`key`: its id and its organization's). */
  month(key: { id: string; orgId: string }, month: string, since: Date): Promise<void> {
    return this.once(`month:${key.id}:${month}`, async () => {
      await this.from.gate.seedMonth(key.orgId, key.id, month, await this.from.monthToDate(key.id, since));
    });
  }

  private once(subject: string, rebuild: () => Promise<void>): Promise<void> {
    let running = this.running.get(subject);
    if (!running) {
      running = rebuild().finally(() => this.running.delete(subject));
      this.running.set(subject, running);
    }
    return running;
  }
}
