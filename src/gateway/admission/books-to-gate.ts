import { describeError, type Logger } from '../../shared/http/log.js';
import type { LimitGate, Release } from './gate.js';

// What the books tell the gate after the fact: a charge a dead replica left behind, a top-up or an
// adjustment committed in PostgreSQL. Neither throws: a gate that cannot take it forgets the
// wallet, which is rebuilt from the ledger once the gate can be reached.

/** A charge for a request admitted by a replica that died (`GateKeeper.chargeLeftBehind`). */
export interface LeftBehindCharge {
  requestId: string;
  orgId: string;
  keyId: string;
  cost: bigint;
  /** The budget counts it was admitted under (the ticket's `budgetTag`); '' when none. */
  budgetTag: string;
}

/**
 * The charge of a request another replica admitted and died running (a background response whose
 * takeover was refused), already in the journal: its hold and slot, while the gate still has them,
 * come back and its cost (null with billing off: none) goes out, as a release does; its token
 * counts keep that admission's estimate.
 */
export async function passLeftBehind(
  gate: LimitGate,
  log: Logger,
  billingEnabled: boolean,
  charge: LeftBehindCharge,
): Promise<void> {
  const cost = billingEnabled ? charge.cost : null;
  const { requestId, orgId, keyId, budgetTag } = charge;
  // No limits named: the key's token counts are left as they are, and its month is not read.
  const release: Release = {
    requestId,
    orgId,
    keyId,
    limits: null,
    month: '',
    tokenDelta: 0,
    tokensWindowEndsAt: 0,
    held: true,
    cost,
    budgetTag,
  };
  await gate.release(release).catch(async (error: unknown) => {
    log.warn('a charge left behind was not passed to the limits store: its wallet is rebuilt', {
      requestId,
      ...describeError(error),
    });
    await gate.forgetWallet(orgId).catch(() => {});
  });
}

/** A top-up or adjustment committed in PostgreSQL, made spendable. */
export async function passCredit(gate: LimitGate, log: Logger, orgId: string, amount: bigint): Promise<void> {
  await gate.credit(orgId, amount).catch(async (error: unknown) => {
    // Not lost: the wallet is rebuilt from PostgreSQL (which holds the top-up) once the gate can be
    // reached.
    log.warn('top-up not passed to the limits store: the wallet is rebuilt from the ledger when it is back', {
      orgId,
      ...describeError(error),
    });
    await gate.forgetWallet(orgId).catch(() => {});
  });
}
