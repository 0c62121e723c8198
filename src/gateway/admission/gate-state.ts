// What the gate is rebuilt and kept whole from (`gate-upkeep.ts`, `rebuild.ts`): the holds and
// charges a replica reports again, a wallet's and a budget count's state read for a rebuild, and
// the requests in flight its heartbeat renews. The gate's own interface is `gate.ts`'s.

/** A hold or a charge a replica reports again to a gate that lost them (a Redis restart). */
export interface Reported {
  orgId: string;
  requestId: string;
  amount: bigint;
  /** The budget counts it falls under (`budgetTag`); absent: none. */
  tag?: string;
}

/** What a wallet's rebuild needs from the gate, read together. */
export interface WalletState {
  /**
   * Moves on every change to the wallet's holds and charges; the rebuild is kept only if it did not
   * move meanwhile.
   */
  version: string;
  holds: Reported[];
  /** Charges made but not yet known to be in PostgreSQL. */
  unwritten: Reported[];
}

/**
 * What a budget count's rebuild needs from the gate, read together: the holds and unwritten charges
 * tagged with it.
 */
export interface BudgetState {
  /**
   * Moves on every change to the count's tagged holds and charges; the rebuild is kept only if it
   * did not move meanwhile.
   */
  version: string;
  /** Holds taken from the count (given back to it when their requests end). */
  holds: Reported[];
  /** Charges counted in it but not yet known to be in PostgreSQL. */
  unwritten: Reported[];
}

/** A request in flight on this replica, as the heartbeat renews it. */
export interface LiveRequest {
  requestId: string;
  keyId: string;
  orgId: string;
  holdNanos: bigint | null;
  /** The budget counts its hold is tagged with (`budgetTag`); '' when it holds nothing. */
  budgetTag: string;
}
