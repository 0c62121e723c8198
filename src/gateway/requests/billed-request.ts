import type { Context } from 'hono';
import type { UpstreamTarget } from '../engines/types.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { CallAbort } from '../proxy/call-abort.js';
import { admitCall } from './admit.js';
import { authorize } from './authorize.js';
import { abandon, keepsAnswer, settle, settleClientGone } from './billed-call.js';
import { relayBilledStream } from './billed-stream.js';
import { cachedAnswer } from './cached-answer.js';
import { type JsonRelay, sendJson, settleTimedOut, writtenJson } from './json-answer.js';
import { headerOf, whenClientLeaves } from '../../shared/http/request.js';
import { abortAfter, sendToEngine } from './engine-call.js';
import { enterFlow } from './flow-wait.js';
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
 *    before the first byte reaches the client (`postWithFailover`; a JSON
 *    answer is read whole there, `sendJson`), aborted when the client leaves
 *    or the upstream timeout passes;
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
  const admitted = await admitClient(c, deps, request, endpoint);
  if (admitted instanceof Response) return admitted;
  const { protocol, call } = admitted;
  const refused = await waitForRoom(c, deps, call, protocol);
  if (refused) return refused;
  const stream = protocol.stream;
  const upstream = engineCallAbort(c, deps.config.upstreamTimeoutMs, stream === null);
  // A relayed stream gives back its replica when it ends; everything else here.
  let target: UpstreamTarget | undefined;
  let relaying = false;
  // A JSON answer read from the engine's stream: what a call cut or failed mid-answer is billed.
  let relay: JsonRelay | undefined;
  // Timing for the overhead histogram and spans (observability/observer.ts); traceparent to send.
  call.upstreamAt = performance.now();
  const traceHeaders = call.trace?.startUpstream(call.startedAt, call.upstreamAt, call.model.id);
  try {
    const inputs = {
      path: endpoint.path,
      abort: upstream.callAbort,
      session: headerOf(c, 'x-session-id'),
      headers: traceHeaders,
    };
    if (stream) {
      const sent = await sendToEngine(deps, call, protocol, inputs);
      target = sent.target;
      call.answeredAt = performance.now();
      call.trace?.upstreamAnswered(target.replicaId, target.servedModelName, call.answeredAt, target.routing);
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
    const sent = await sendJson(deps, call, protocol, endpoint, inputs, (attempt) => (relay = attempt));
    target = sent.target;
    call.trace?.upstreamAnswered(target.replicaId, target.servedModelName, call.answeredAt, target.routing);
    const { usage, reported, written } = await writtenJson(sent.read, endpoint, protocol, call);
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
    const state = relay?.assembled.state;
    const prompt = () => protocol.estimate(null).promptTokens;
    if (upstream.clientLeft()) return settleClientGone(deps, call, prompt(), state);
    // The timeout cut the engine mid-answer: billed what it generated. An engine that broke off is
    // billed nothing (its client got none of it: docs/decisions.md), as a call that failed before.
    if (upstream.callAbort.aborted && state && (state.usage || state.tokenChunks > 0))
      await settleTimedOut(deps, call, prompt(), state);
    else await abandon(deps, call);
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
  const admitted = await admitClient(c, deps, request, endpoint);
  if (admitted instanceof Response) return admitted;
  return background.queue(c, deps, { ...admitted, path: endpoint.path, streamed });
}

/**
 * A cached answer, or the call admitted (`admit.ts`), the gate's headers (its limits, what
 * remains) written for the client.
 */
async function admitClient(
  c: Context<GatewayEnv>,
  deps: BilledDeps,
  request: AuthorizedRequest,
  endpoint: BilledEndpoint,
): Promise<{ protocol: ProtocolCall; call: BilledCall } | Response> {
  const cached = await cachedAnswer(c, deps, request);
  if (cached) return cached;
  const admitted = await admitCall(deps, request, endpoint, c.get('trace'));
  for (const [name, value] of Object.entries(admitted.call.ticket.headers)) c.header(name, value);
  return admitted;
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
    await enterFlow(deps, call, protocol, (leave) => {
      stopWatching = whenClientLeaves(c, leave);
    });
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
  const clearTimer = abortAfter(callAbort, timeoutMs);
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
    clearTimer,
    stopWatchingClient,
  };
}
