import { withinStoreTimeout } from '../../shared/db/timeout.js';
import { describeError, type Logger } from '../../shared/http/log.js';
import type { AuthenticatedKey } from '../keys/service.js';
import type { LimitGate, Window } from './gate.js';
import type { LiveRequest } from './gate-state.js';
import { limitsUnavailableOnFailure, refusal } from './refusals.js';

/**
 * The first step of a billed request's admission (`GateKeeper.admitRate`): its key's requests per
 * minute and concurrency, taken as soon as the key is known, so that what a request makes the
 * gateway do before its hold (a stored conversation read, a translation) counts against the key as
 * the request does. `admit` takes the pass over (then the request's release frees the slot); a
 * request refused before that gives it back (`giveBackRate`): its slot, and its count inside its
 * minute, so a refused request takes nothing.
 */

/** What the first step took: handed to `GateKeeper.admit`, which takes it over, or given back. */
export interface RatePass {
  requestId: string;
  caller: AuthenticatedKey;
  /**
   * The minute's count as the first step saw it, for the headers; null: limits are off and nothing
   * was taken.
   */
  requests: Window | null;
  /** When that minute ends (the gate's clock): the count is given back only before. */
  windowEndsAt: number;
  /** Taken over by an admitted request, or given back already. */
  done: boolean;
}

/**
 * What the step uses of the `GateKeeper`: its gate, the requests it renews, its log, whether limits
 * are on.
 */
export interface RateStepDeps {
  gate: LimitGate;
  live: Map<string, LiveRequest>;
  log: Logger;
  limitsEnabled: boolean;
}

/** 429 when refused, 503 when the gate cannot answer within the store's timeout. */
export async function admitRate(
  deps: RateStepDeps,
  request: { requestId: string; caller: AuthenticatedKey; alone?: boolean },
): Promise<RatePass> {
  const { requestId, caller } = request;
  const pass: RatePass = { requestId, caller, requests: null, windowEndsAt: 0, done: false };
  if (!deps.limitsEnabled) return pass;
  const asking = deps.gate.admitRate({
    requestId,
    keyId: caller.id,
    orgId: caller.orgId,
    limits: caller,
    alone: request.alone,
  });
  const admission = await limitsUnavailableOnFailure(() => withinStoreTimeout(asking)).catch((error: unknown) => {
    // Timed out: if the gate takes it after all, it is given back at once.
    asking.then(
      (late) => {
        if (late.outcome !== 'admitted') return;
        const taken = { requestId, caller, requests: late.requests, windowEndsAt: late.windowEndsAt, done: false };
        void giveBackRate(deps, taken);
      },
      () => {},
    );
    throw error;
  });
  if (admission.outcome !== 'admitted') throw refusal(admission, caller, 0);
  // Renewed by the heartbeat while the request reads and translates, as it is once it holds funds.
  deps.live.set(requestId, { requestId, keyId: caller.id, orgId: caller.orgId, holdNanos: null, budgetTag: '' });
  return Object.assign(pass, { requests: admission.requests, windowEndsAt: admission.windowEndsAt });
}

/**
 * Gives back what `admitRate` took, unless `admit` took it over; once. Never throws: a slot left
 * behind expires with its lease.
 */
export async function giveBackRate(deps: RateStepDeps, pass: RatePass): Promise<void> {
  if (pass.done || pass.requests === null) return;
  pass.done = true;
  deps.live.delete(pass.requestId);
  const taken = {
    requestId: pass.requestId,
    keyId: pass.caller.id,
    orgId: pass.caller.orgId,
    windowEndsAt: pass.windowEndsAt,
  };
  await deps.gate.giveBackRate(taken).catch((error: unknown) => {
    deps.log.debug('rate step not given back: its slot expires with its lease', {
      requestId: pass.requestId,
      ...describeError(error),
    });
  });
}
