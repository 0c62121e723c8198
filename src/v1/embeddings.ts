import type { Context } from 'hono';
import type { GatewayEnv } from '../http/context.js';
import { withoutNullFields } from '../proxy/openai-shape.js';
import { postUpstream } from '../proxy/upstream.js';
import { usageFrom } from '../proxy/usage.js';
import type { Services } from '../services.js';
import { abandon, acquireOrAbandon, admit, settle } from './billed-call.js';

/**
 * POST /v1/embeddings. `encoding_format` (float or base64) goes to the engine
 * unchanged, so base64 vectors are relayed as the engine encoded them.
 */
export async function embeddings(c: Context<GatewayEnv>, services: Services): Promise<Response> {
  const call = await admit(c, services, 'embedding');
  const target = await acquireOrAbandon(services, call);
  try {
    const response = await postUpstream({
      target,
      path: '/embeddings',
      body: { ...call.body, model: target.servedModelName },
      clientModel: call.clientModel,
      signal: AbortSignal.timeout(services.config.upstreamTimeoutMs),
    });
    const result = (await response.json()) as Record<string, unknown>;
    result.model = call.clientModel;
    // Clients index results by position: keep them in input order whatever order the engine used.
    if (Array.isArray(result.data)) (result.data as Array<{ index: number }>).sort((a, b) => a.index - b.index);
    const usage = usageFrom(result.usage);
    // An engine that reports no usage is billed at zero tokens but still recorded, and logged.
    if (!usage) services.log.warn('engine reported no usage for embeddings', { requestId: call.requestId, model: call.model.id });
    await settle(services, call, { usage: usage ?? { promptTokens: 0, completionTokens: 0 }, usageSource: usage ? 'upstream' : 'estimated', status: 200, streamed: false });
    return c.json(withoutNullFields(result));
  } catch (error) {
    await abandon(services, call);
    throw error;
  } finally {
    target.release();
  }
}
