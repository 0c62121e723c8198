import type { UpstreamTarget } from '../engines/types.js';
import { bandRank, enginePriority } from '../flow/bands.js';
import type { CallAbort } from '../proxy/call-abort.js';
import { engineMembersFor, withEngineFields } from '../proxy/engine-fields.js';
import { type FailoverCall, postWithFailover } from '../proxy/failover.js';
import type { EngineResponse } from '../proxy/upstream.js';
import type { BilledCall } from './authorize.js';
import type { BilledDeps, ProtocolCall } from './endpoint.js';

/** What reaching the engine needs beyond the call: its abort, and what only a client's request has. */
export interface EngineCallInputs {
  /** The endpoint's path on the engine (`BilledEndpoint.path`). */
  path: string;
  /** Aborts the engine's work wherever it is: a client gone, a cancel, a stop, the timeout. */
  abort: CallAbort;
  /** The client's `X-Session-ID`, a routing hint; none for work with no client. */
  session?: string;
  /** Headers for every replica tried (the trace's `traceparent`). */
  headers?: Record<string, string>;
  /**
   * Reads a JSON call's answer whole inside failover (`FailoverCall.readWhole`, `json-answer.ts`'s
   * `sendJson`).
   */
  readWhole?: FailoverCall['readWhole'];
}

/** The engine's answer and the replica it came from, released by whoever relays it. */
export interface EngineAnswer {
  response: EngineResponse;
  target: UpstreamTarget;
}

/**
 * The one way a call reaches an engine, whoever asked for it: a client's request, a background
 * response or a batch line. An engine scaled to zero starts a replica first (bounded, and
 * aborted with the call); the router picks a replica by the call's routing hint; a replica that
 * fails before answering is replaced by another (`postWithFailover`).
 */
export async function sendToEngine(
  deps: BilledDeps,
  call: BilledCall,
  protocol: ProtocolCall,
  inputs: EngineCallInputs,
): Promise<EngineAnswer> {
  const cold = deps.fleet.whenReady(call.model.id, inputs.abort);
  if (cold) await cold;
  const { acquire, body } = fleetCall(deps, call, protocol, inputs.session);
  return postWithFailover({
    acquire,
    path: inputs.path,
    body,
    headers: inputs.headers,
    clientModel: call.clientModel,
    abort: inputs.abort,
    agents: deps.engineAgents,
    readWhole: inputs.readWhole,
  });
}

/**
 * Aborts `abort` once `timeoutMs` passes (the upstream timeout); the returned function clears it.
 * A timer, not `AbortSignal.timeout`: each signal costs the hot path CPU (`proxy/call-abort.ts`).
 */
export function abortAfter(abort: CallAbort, timeoutMs: number): () => void {
  const timeout = setTimeout(() => abort.abort(new DOMException('upstream timeout', 'TimeoutError')), timeoutMs);
  timeout.unref();
  return () => clearTimeout(timeout);
}

/**
 * How the fleet is asked for a replica (the routing hint, with the organization whose prompts the
 * prefix index keeps apart) and what each replica tried is sent: the protocol's body with the
 * engine's own fields, the organization's cache salt and the band as priority where the engine
 * takes them (`proxy/engine-fields.ts`).
 */
function fleetCall(deps: BilledDeps, call: BilledCall, protocol: ProtocolCall, session: string | undefined) {
  const hint = { body: call.body, session, organization: call.caller.orgId, replica: call.flowPass?.replica };
  // The priority flow control chose (ahead of the band's others while the organization is below its
  // share), else the band's.
  const priority = call.flowPass?.priority ?? enginePriority(bandRank(call.band), false);
  const fields = { salt: () => deps.cacheSalts.of(call.caller.orgId), priority };
  return {
    acquire: (exclude: ReadonlySet<string>) => {
      const target = deps.fleet.acquire(call.model.id, exclude, hint);
      // The last one tried is where it runs: the slot its end frees there.
      call.flowPass?.ranOn(target.replicaId);
      return target;
    },
    body: (target: UpstreamTarget) =>
      withEngineFields(protocol.bodyFor(target), engineMembersFor(target, fields), call.body),
  };
}
