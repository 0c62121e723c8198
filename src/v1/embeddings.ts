import type { Context } from 'hono';
import type { GatewayEnv } from '../http/context.js';
import { withoutNullFields } from '../proxy/openai-shape.js';
import type { UpstreamTarget } from '../engines/types.js';
import { postWithFailover } from '../proxy/failover.js';
import { readEngineJson } from '../proxy/upstream.js';
import { estimateInputTokens, usageFrom } from '../proxy/usage.js';
import type { Services } from '../services.js';
import { authorize, reserve } from './admission.js';
import { abandon, settle, settleClientGone } from './billed-call.js';
import { cachedAnswer } from './cached-answer.js';

/**
 * POST /v1/embeddings. `encoding_format` (float or base64) goes to the engine
 * unchanged, so base64 vectors are relayed as the engine encoded them.
 */
export async function embeddings(c: Context<GatewayEnv>, services: Services): Promise<Response> {
  const request = await authorize(c, services, 'embedding');
  const cached = await cachedAnswer(c, services, request);
  if (cached) return cached;
  const call = await reserve(c, services, request);
  let target: UpstreamTarget | undefined;
  try {
    const sent = await postWithFailover({
      acquire: (exclude) => services.fleet.acquire(call.model.id, exclude),
      path: '/embeddings',
      body: (t) => ({ ...call.body, model: t.servedModelName }),
      clientModel: call.clientModel,
      // A client that leaves aborts the engine's work at once.
      signal: AbortSignal.any([AbortSignal.timeout(services.config.upstreamTimeoutMs), c.req.raw.signal]),
    });
    target = sent.target;
    const response = sent.response;
    const result = await readEngineJson(response);
    result.model = call.clientModel;
    // Clients index results by position: keep them in input order whatever order the engine used.
    if (Array.isArray(result.data)) (result.data as Array<{ index: number }>).sort((a, b) => a.index - b.index);
    const reported = usageFrom(result.usage);
    const usage = reported ?? { promptTokens: estimateInputTokens(call.body.input), completionTokens: 0 };
    const text = JSON.stringify(withoutNullFields(result));
    await settle(services, call, {
      usage,
      usageSource: reported ? 'upstream' : 'estimated',
      status: 200,
      streamed: false,
      answer: { kind: 'json', body: text, ...usage },
    });
    return c.body(text, 200, { 'content-type': 'application/json' });
  } catch (error) {
    if (c.req.raw.signal.aborted) return settleClientGone(services, call, estimateInputTokens(call.body.input));
    await abandon(services, call);
    throw error;
  } finally {
    target?.release();
  }
}
