import type { FlowRequest } from '../flow/flow-types.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { BilledCall } from './authorize.js';
import type { BilledDeps, ProtocolCall } from './endpoint.js';

/** How long work with no client waits before asking flow control again after a refusal. */
const REQUEUE_MS = 1_000;

/** What flow control is told of a call: its model, organization, band and size. */
function flowRequestOf(call: BilledCall, protocol: ProtocolCall): FlowRequest {
  return {
    modelId: call.model.id,
    orgId: call.caller.orgId,
    band: call.band,
    weight: call.caller.orgShareWeight,
    // About four bytes a token: what fairness counts until the engine's own count replaces it.
    promptTokens: Math.ceil(protocol.sentBytes / 4),
    completionBound: call.bounds.completionTokens,
  };
}

/**
 * Waits for flow control (`flow/flow-control.ts`) to let the call go to its model's engines: at
 * once when they have room, else in the gateway's fair queue. Its pass is kept on the call
 * (`flowPass`), for the slot its end frees. Throws flow control's refusal (a queue bound, the
 * longest wait) or, once `onLeave`'s function is called, an `AbortError`.
 */
export async function enterFlow(
  deps: BilledDeps,
  call: BilledCall,
  protocol: ProtocolCall,
  onLeave: (leave: () => void) => void,
): Promise<void> {
  const entered = deps.flow.enter(flowRequestOf(call, protocol), { onLeave });
  call.flowPass = entered instanceof Promise ? await entered : entered;
}

/**
 * Work with no client (a background response, a batch line) waits as long as it must: a refusal
 * (the engines stayed saturated for the longest wait) is asked again after a pause. False once
 * `stopped` says so, its pass (if any) given back.
 */
export async function waitForEngines(
  deps: BilledDeps,
  call: BilledCall,
  protocol: ProtocolCall,
  stopped: () => boolean,
  onLeave: (leave: () => void) => void,
): Promise<boolean> {
  while (!stopped()) {
    try {
      await enterFlow(deps, call, protocol, onLeave);
      if (!stopped()) return true;
      call.flowPass?.done({ promptTokens: 0, completionTokens: 0 });
      call.flowPass = null;
      return false;
    } catch (error) {
      if (!(error instanceof GatewayError) && !(error instanceof DOMException)) throw error;
      if (!stopped()) await new Promise((resolve) => setTimeout(resolve, REQUEUE_MS));
    }
  }
  return false;
}
