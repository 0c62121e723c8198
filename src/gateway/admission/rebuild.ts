import type { WalletService } from '../billing/wallet.js';
import type { Logger } from '../../shared/http/log.js';
import type { BudgetLimit, BudgetScope } from './budgets.js';
import type { LimitGate } from './gate.js';

/** A budget's window, read from the usage records: the charges written in it, and which of `requestIds` are written. */
export type BudgetSpendReader = (
  scope: BudgetScope,
  subjectId: string,
  window: { from: Date; to: Date },
  requestIds: string[],
) => Promise<{ spent: bigint; written: Set<string> }>;

/** A budget count is kept a day past its window, so a request that ends just after it still finds it. */
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
 * A budget's count for its window, as the wallet's is rebuilt: the charges in the usage records since the
 * window began, plus the holds taken from it, plus its charges not yet written there. Kept only if the gate's
 * state for it did not change meanwhile; tried again otherwise.
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
    const state = await gate.budgetState(orgId, budget.counter);
    const unwritten = state.unwritten.map((c) => c.requestId);
    const { spent: recorded, written } = await read(budget.scope, budget.subjectId, window, unwritten);
    let spent = recorded;
    for (const hold of state.holds) spent += hold.amount;
    for (const charge of state.unwritten) if (!written.has(charge.requestId)) spent += charge.amount;
    const ttlMs = budget.endsAt - Date.now() + BUDGET_TTL_MARGIN_MS;
    if (await gate.setBudgetSpent(budget.counter, spent, state.version, ttlMs)) {
      log.info('budget spend rebuilt from the usage records', { counter: budget.counter, holds: state.holds.length });
      return;
    }
  }
}
