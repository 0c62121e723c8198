import type { Context } from 'hono';
import type { UpstreamTarget } from '../engines/types.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { CallAbort } from '../proxy/call-abort.js';
import { engineMembersFor, withEngineFields } from '../proxy/engine-fields.js';
import { postWithFailover } from '../proxy/failover.js';
import { bandRank } from '../flow/bands.js';
import { authorize, reserve } from './authorize.js';
import { abandon, keepsAnswer, settle, settleClientGone } from './billed-call.js';
import { relayBilledStream } from './billed-stream.js';
import { cachedAnswer } from './cached-answer.js';
import { answeredJson } from './json-answer.js';
import { headerOf, whenClientLeaves } from '../../shared/http/request.js';
import type { BilledDeps, BilledEndpoint, ProtocolCall } from './endpoint.js';
import type { AuthorizedRequest, BilledCall } from './authorize.js';
import type { BackgroundQueue } from './background-queue.js';

export type { BilledDeps, BilledEndpoint, ProtocolCall, StreamControls } from './endpoint.js';

/**
 * The life of a billed request, as CONTRIBUTING.md's request path reads:
 *
 * 1. admit: key, body, model, price, project (`authorize`); a cached answer
 *    if the key has the cache on; for a call that reads the store first
 *    (`admitsRateFirst`), the key's requests per minute and
 *    concurrency first (`admitRate`); the protocol's call begun
 *    (`endpoint.begin`: the stored conversation, what the engine is sent);
 *    then the wallet hold and the key's limits, from what the engine is sent
 *    (`reserve`);
 * 2. call: the engine, on a ready replica the router picks (by default scored
 *    on its load and the prompt's prefix, `engines/routing/`), failing over
 *    before the first byte (`postWithFailover`), aborted when the client
 *    leaves or the upstream timeout passes;
 * 3. relay: the JSON answer with the client's model name, or the stream
 *    event by event (`relayBilledStream`, the protocol's `StreamWriter`);
 * 4. settle: usage from the engine (held to the request's bounds), the
 *    charge, the limits settled, the hold given back (`settle`); or, when the
 *    call failed before using anything, everything given back (`abandon`).
 *
 * @example
 * routes.post('/', (c) => serveBilled(c, deps, EMBEDDINGS));
 */
export async function serveBilled(
  c: Context<GatewayEnv>,
  deps: BilledDeps,
  endpoint: BilledEndpoint,
  background?: BackgroundQueue,
): Promise<Response> {
  const request = await authorize(c, deps, endpoint);
  if (background?.wants(request)) return serveQueued(c, deps, request, endpoint, background);
  return serveAuthorized(c, deps, request, endpoint);
}

/**
 * An authorized request's call, from its admission to its settlement (`serveBilled`'s steps 1 to
 * 4).
 */
async function serveAuthorized(
  c: Context<GatewayEnv>,
  deps: BilledDeps,
  request: AuthorizedRequest,
  endpoint: BilledEndpoint,
): Promise<Response> {
  const admitted = await admitCall(c, deps, request, endpoint);
  if (admitted instanceof Response) return admitted;
  const { protocol, call } = admitted;
  const refused = await waitForRoom(c, deps, call, protocol);
  if (refused) return refused;
  const stream = protocol.stream;
  const upstream = engineCallAbort(c, deps.config.upstreamTimeoutMs, stream === null);
  // A relayed stream gives back its replica when it ends; everything else here.
  let target: UpstreamTarget | undefined;
  let relaying = false;
  // Timing for the overhead histogram and spans (observability/observer.ts); traceparent to send.
  call.upstreamAt = performance.now();
  const traceHeaders = call.trace?.startUpstream(call.startedAt, call.upstreamAt, call.model.id);
  try {
    // An engine scaled to zero starts a replica for this request, which waits for it (bounded).
    const cold = deps.fleet.whenReady(call.model.id, upstream.callAbort);
    if (cold) await cold;
    const { acquire, body } = fleetCall(deps, call, protocol, headerOf(c, 'x-session-id'));
    const sent = await postWithFailover({
      acquire,
      path: endpoint.path,
      body,
      headers: traceHeaders,
      clientModel: call.clientModel,
      abort: upstream.callAbort,
      agents: deps.engineAgents,
    });
    target = sent.target;
    call.answeredAt = performance.now();
    call.trace?.upstreamAnswered(target.replicaId, target.servedModelName, call.answeredAt, target.routing);
    if (stream) {
      relaying = true;
      c.set('streaming', true);
      const relayed = target;
      const release = () => {
        relayed.release();
        upstream.clearTimer();
      };
      const promptEstimate = () => protocol.estimate(null).promptTokens;
      const controls = { abort: upstream.abort, release };
      const writer = stream(call.bounds);
      return relayBilledStream({ c, deps, call, response: sent.response, controls, writer, promptEstimate });
    }
    const { usage, reported, written } = await answeredJson(sent.response, endpoint, protocol, call);
    await settle(deps, call, {
      usage,
      usageSource: reported ? 'upstream' : 'estimated',
      status: 200,
      streamed: false,
      answer: keepsAnswer(call)
        ? { kind: 'json', body: typeof written === 'string' ? written : written.toString('utf8'), ...usage }
        : undefined,
    });
    return c.body(written, 200, { 'content-type': 'application/json' });
  } catch (error) {
    call.trace?.upstreamFailed(error);
    if (upstream.clientLeft()) return settleClientGone(deps, call, protocol.estimate(null).promptTokens);
    await abandon(deps, call);
    throw error;
  } finally {
    if (!relaying) {
      target?.release();
      upstream.clearTimer();
    }
    upstream.stopWatchingClient();
  }
}

/**
 * A request that runs after its answer (`background: true`): admitted as any call, its hold taken,
 * then queued and answered at once (`responses/background.ts`). Streamed from the engine whatever
 * its client asked: its events are kept as they come.
 */
async function serveQueued(
  c: Context<GatewayEnv>,
  deps: BilledDeps,
  request: AuthorizedRequest,
  endpoint: BilledEndpoint,
  background: BackgroundQueue,
): Promise<Response> {
  const streamed = request.body.stream === true;
  request.body.stream = true;
  const admitted = await admitCall(c, deps, request, endpoint);
  if (admitted instanceof Response) return admitted;
  return background.queue(c, deps, admitted.call, admitted.protocol, streamed);
}

/**
 * A cached answer, or the call begun and admitted. A protocol whose `begin` does work that grows
 * with the request (a stored conversation read, a translation) has the key's requests per minute
 * and concurrency taken first, so a refused key costs nothing of that work; the other protocols
 * take every limit in one step (one Redis round trip). Whatever fails after the first step gives it
 * back.
 */
async function admitCall(
  c: Context<GatewayEnv>,
  deps: BilledDeps,
  request: AuthorizedRequest,
  endpoint: BilledEndpoint,
): Promise<{ protocol: ProtocolCall; call: BilledCall } | Response> {
  const cached = await cachedAnswer(c, deps, request);
  if (cached) return cached;
  if (!endpoint.admitsRateFirst?.(request)) {
    const protocol = await endpoint.begin(request, deps);
    return { protocol, call: await reserve(c, deps, request, protocol) };
  }
  const rate = await deps.gateKeeper.admitRate({
    requestId: request.requestId,
    caller: request.caller,
    alone: deps.inFlight.size === 0,
  });
  try {
    const protocol = await endpoint.begin(request, deps);
    return { protocol, call: await reserve(c, deps, request, protocol, rate) };
  } catch (error) {
    await deps.gateKeeper.giveBackRate(rate);
    throw error;
  }
}

/**
 * Flow control (`flow/flow-control.ts`): at once when the model's engines have room, else the call
 * waits in the gateway's fair queue for its turn. A call refused there (a queue bound, the longest
 * wait) or whose client leaves while it waits gives everything back and is billed nothing: the
 * error, or a 499 that goes to nobody. Its headers leave only once it is dispatched.
 */
async function waitForRoom(
  c: Context<GatewayEnv>,
  deps: BilledDeps,
  call: BilledCall,
  protocol: ProtocolCall,
): Promise<Response | null> {
  let stopWatching = () => {};
  try {
    const request = {
      modelId: call.model.id,
      orgId: call.caller.orgId,
      band: call.band,
      weight: call.caller.orgShareWeight,
      // About four bytes a token: what fairness counts until the engine's own count replaces it.
      promptTokens: Math.ceil(protocol.sentBytes / 4),
      completionBound: call.bounds.completionTokens,
    };
    const entered = deps.flow.enter(request, {
      onLeave: (leave) => {
        stopWatching = whenClientLeaves(c, leave);
      },
    });
    call.flowPass = entered instanceof Promise ? await entered : entered;
    return null;
  } catch (error) {
    await abandon(deps, call);
    if (error instanceof DOMException && error.name === 'AbortError') return new Response(null, { status: 499 });
    throw error;
  } finally {
    stopWatching();
  }
}

/**
 * What aborts the engine's work at once: the upstream timeout, and (for a
 * JSON answer) the client leaving; a stream's relay does the same when its
 * client leaves. A timer, a listener and a `CallAbort`, not AbortSignal.timeout/any
 * nor an AbortController: each signal costs the hot path CPU (`proxy/call-abort.ts`).
 */
function engineCallAbort(c: Context<GatewayEnv>, timeoutMs: number, watchClient: boolean) {
  const callAbort = new CallAbort();
  const timeout = setTimeout(() => callAbort.abort(new DOMException('upstream timeout', 'TimeoutError')), timeoutMs);
  timeout.unref();
  let clientLeft = false;
  const stopWatchingClient = watchClient
    ? whenClientLeaves(c, () => {
        clientLeft = true;
        callAbort.abort(new DOMException('the client closed the connection', 'AbortError'));
      })
    : () => {};
  return {
    callAbort,
    abort: () => callAbort.abort(),
    clientLeft: () => clientLeft,
    clearTimer: () => clearTimeout(timeout),
    stopWatchingClient,
  };
}

/**
 * How the fleet is asked for a replica (the routing hint, with the organization whose prompts the
 * prefix index keeps apart) and what each replica tried is sent: the protocol's body with the
 * engine's own fields, the organization's cache salt and the band as priority where the engine
 * takes them (`proxy/engine-fields.ts`).
 */
export function fleetCall(deps: BilledDeps, call: BilledCall, protocol: ProtocolCall, session: string | undefined) {
  const hint = { body: call.body, session, organization: call.caller.orgId, replica: call.flowPass?.replica };
  const fields = { salt: () => deps.cacheSalts.of(call.caller.orgId), priority: bandRank(call.band) };
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
