import type { AuthenticatedKey } from '../keys/service.js';
import type { RatePass } from './rate-step.js';
import type { RebuildSources } from './rebuild.js';
import type { Budgets } from './budgets.js';

// What the gate keeper is made with, and what a request asks of it.

/**
 * `monthToDate` and `budgetSpend`: what a missing month's count and a missing budget's count are
 * read from.
 */
export interface GateKeeperOptions extends Pick<RebuildSources, 'monthToDate' | 'budgetSpend'> {
  limitsEnabled: boolean;
  billingEnabled: boolean;
  /** The shorter of the hold and slot leases: what is running is renewed every third of it. */
  renewEveryMs: number;
  /** See `Config.rebuildGraceMs`. */
  rebuildGraceMs: number;
  /** A project's budgets (from the request-path cache); undefined: no such project. */
  projectBudgets(projectId: string): Promise<Budgets | undefined>;
}

/** What a request asks of `GateKeeper.admit`. */
export interface AdmissionAsk {
  requestId: string;
  caller: AuthenticatedKey;
  estimatedTokens: number;
  holdNanos: bigint | null;
  /**
   * The first step's pass (`admitRate`); without it, this one step takes all four limits and the
   * hold.
   */
  rate?: RatePass;
  /** The project the request is booked to, whose budgets it falls under; null: none. */
  projectId?: string | null;
  alone?: boolean; // no other billed call under way on this replica (`LimitGate`'s `alone`)
}
