import type { RequestTrace } from '../../shared/observability/tracing.js';
import { type AuthorizedRequest, type BilledCall, reserve } from './authorize.js';
import type { BilledDeps, BilledEndpoint, ProtocolCall } from './endpoint.js';

/** An admitted call: the protocol's call begun, and the hold and limits it took. */
export interface AdmittedCall {
  protocol: ProtocolCall;
  call: BilledCall;
}

/**
 * Admits an authorized request, whoever asked (a client's request, a background response taken
 * over, a batch line): the protocol's call begun (`endpoint.begin`: the stored conversation, what
 * the engine is sent), then the wallet's hold and the key's limits, from what the engine is sent
 * (`reserve`). A protocol whose `begin` does work that grows with the request (a stored
 * conversation read, a translation) has the key's requests per minute and concurrency taken
 * first, so a refused key costs nothing of that work; the other protocols take every limit in one
 * step (one Redis round trip). Whatever fails after the first step gives it back.
 */
export async function admitCall(
  deps: BilledDeps,
  request: AuthorizedRequest,
  endpoint: BilledEndpoint,
  trace?: RequestTrace,
): Promise<AdmittedCall> {
  if (!endpoint.admitsRateFirst?.(request)) {
    const protocol = await endpoint.begin(request, deps);
    return { protocol, call: await reserve(deps, request, protocol, { trace }) };
  }
  const rate = await deps.gateKeeper.admitRate({
    requestId: request.requestId,
    caller: request.caller,
    alone: deps.inFlight.size === 0,
  });
  try {
    const protocol = await endpoint.begin(request, deps);
    return { protocol, call: await reserve(deps, request, protocol, { rate, trace }) };
  } catch (error) {
    await deps.gateKeeper.giveBackRate(rate);
    throw error;
  }
}
