import type { Context } from 'hono';
import type { UpstreamTarget } from '../engines/types.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { postWithFailover } from '../proxy/failover.js';
import { withoutNullFields } from '../proxy/openai-shape.js';
import { readEngineAnswer } from '../proxy/upstream.js';
import { usageFrom } from '../proxy/usage.js';
import { authorize, reserve } from './admission.js';
import { abandon, keepsAnswer, settle, settleClientGone } from './billed-call.js';
import { cachedAnswer } from './cached-answer.js';
import { headerOf, whenClientLeaves } from '../../shared/http/request.js';
import type { BilledDeps, BilledEndpoint } from './endpoint.js';
import type { AuthorizedRequest, BilledCall } from './admission.js';

export type { BilledDeps, BilledEndpoint, StreamControls } from './endpoint.js';

/**
 * The life of a billed request, as CONTRIBUTING.md's request path reads:
 *
 * 1. admit: key, body, model, price, project (`authorize`); a cached answer
 *    if the key has the cache on; the key's requests per minute and concurrency
 *    (`admitRate`); the stored conversation (`prepare`); then the wallet hold
 *    and the key's token limits (`reserve`);
 * 2. call: the engine, on a ready replica the router picks (by default scored
 *    on its load and the prompt's prefix, `engines/routing/`), failing over
 *    before the first byte (`postWithFailover`), aborted when the client
 *    leaves or the upstream timeout passes;
 * 3. relay: the JSON answer with the client's model name, or the stream
 *    event by event (`relayStream`);
 * 4. settle: usage from the engine (held to the request's bounds), the
 *    charge, the limits settled, the hold given back (`settle`); or, when the
 *    call failed before using anything, everything given back (`abandon`).
 *
 * @example
 * routes.post('/', (c) => serveBilled(c, services, EMBEDDINGS));
 */
export async function serveBilled(
  c: Context<GatewayEnv>,
  services: BilledDeps,
  endpoint: BilledEndpoint,
): Promise<Response> {
  const request = await authorize(c, services, endpoint);
  const call = await admitCall(c, services, request, endpoint);
  if (call instanceof Response) return call;

  const stream = endpoint.streams(call.body);
  const upstream = engineCallAbort(c, services.config.upstreamTimeoutMs, !stream);
  const signal = upstream.signal;
  // A relayed stream gives back its replica when it ends; everything else gives it back here.
  let target: UpstreamTarget | undefined;
  let relaying = false;
  // Timing points for the overhead histogram and the spans (observability/observer.ts); the engine gets the trace's traceparent.
  call.upstreamAt = performance.now();
  const traceHeaders = call.trace?.startUpstream(call.startedAt, call.upstreamAt, call.model.id);
  try {
    // An engine scaled to zero starts a replica for this request, which waits for it (bounded).
    const cold = services.fleet.whenReady(call.model.id, signal);
    if (cold) await cold;
    const sent = await postWithFailover({
      acquire: (exclude) =>
        services.fleet.acquire(call.model.id, exclude, { body: call.body, session: headerOf(c, 'x-session-id') }),
      path: endpoint.path,
      body: (t) => endpoint.upstreamBody(call, t),
      headers: traceHeaders,
      clientModel: call.clientModel,
      signal,
    });
    target = sent.target;
    call.answeredAt = performance.now();
    call.trace?.upstreamAnswered(target.replicaId, target.servedModelName, call.answeredAt, target.routing);
    if (stream) {
      relaying = true;
      c.set('streaming', true);
      const relayed = target;
      return endpoint.relayStream!(c, services, call, sent.response, {
        abort: upstream.abort,
        release: () => {
          relayed.release();
          upstream.clearTimer();
        },
      });
    }
    const { answer, restore } = await readEngineAnswer(sent.response, endpoint.liftArrays);
    call.upstreamDoneAt = performance.now();
    answer.model = call.clientModel;
    endpoint.shapeAnswer?.(answer);
    const answered = endpoint.answerOf ? await endpoint.answerOf(answer, call) : withoutNullFields(answer);
    // A string, or bytes when arrays were lifted (their bytes are the engine's, never decoded).
    const written = restore(JSON.stringify(answered));
    const reported = usageFrom(answer.usage);
    const usage = reported ?? endpoint.estimate(call, answer);
    await settle(services, call, {
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
    if (upstream.clientLeft()) return settleClientGone(services, call, endpoint.estimate(call, null).promptTokens);
    await abandon(services, call);
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
 * A cached answer first, if the key has the cache on (free, and counted against no limit; never for the
 * Responses API, whose stored conversation comes next). Then the key's requests per minute and concurrency
 * (`admitRate`): what follows (a stored chain read, the translation, the hold) counts against them as the
 * request does. Then the stored conversation and the hold with the token limits (`reserve`). Whatever refuses
 * the request before the hold is taken gives the first step back: no slot or count is left behind.
 */
async function admitCall(
  c: Context<GatewayEnv>,
  services: BilledDeps,
  request: AuthorizedRequest,
  endpoint: BilledEndpoint,
): Promise<BilledCall | Response> {
  const cached = await cachedAnswer(c, services, request);
  if (cached) return cached;
  // Chat, completions, embeddings: nothing that grows with the request runs between the two steps, so they are
  // one (one Redis round trip on the hot path, as before the split).
  if (!endpoint.prepare && !endpoint.boundedFields) return reserve(c, services, request, endpoint);
  const rate = await services.gateKeeper.admitRate(request);
  try {
    if (endpoint.prepare) await endpoint.prepare(request);
    return await reserve(c, services, request, endpoint, rate);
  } catch (error) {
    await services.gateKeeper.giveBackRate(rate);
    throw error;
  }
}

/**
 * What aborts the engine's work at once: the upstream timeout, and (for a
 * JSON answer) the client leaving; a stream's relay does the same when its
 * client leaves. A timer and a listener, not AbortSignal.timeout/any: each
 * signal those make costs the hot path more CPU than the whole admission.
 */
function engineCallAbort(c: Context<GatewayEnv>, timeoutMs: number, watchClient: boolean) {
  const controller = new AbortController();
  const timeout = setTimeout(() => controller.abort(new DOMException('upstream timeout', 'TimeoutError')), timeoutMs);
  timeout.unref();
  let clientLeft = false;
  const stopWatchingClient = watchClient
    ? whenClientLeaves(c, () => {
        clientLeft = true;
        controller.abort(new DOMException('the client closed the connection', 'AbortError'));
      })
    : () => {};
  return {
    signal: controller.signal,
    abort: () => controller.abort(),
    clientLeft: () => clientLeft,
    clearTimer: () => clearTimeout(timeout),
    stopWatchingClient,
  };
}
