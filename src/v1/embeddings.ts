import type { Context } from 'hono';
import type { GatewayEnv } from '../http/context.js';
import { estimateInputTokens } from '../proxy/usage.js';
import type { Services } from '../services.js';
import { type BilledEndpoint, serveBilled } from './billed-request.js';

/**
 * POST /v1/embeddings. `encoding_format` (float or base64) goes to the engine
 * unchanged, so base64 vectors are relayed as the engine encoded them.
 */
export const EMBEDDINGS: BilledEndpoint = {
  task: 'embedding',
  path: '/embeddings',
  streams: () => false,
  upstreamBody: (call, target) => ({ ...call.body, model: target.servedModelName }),
  shapeAnswer(answer) {
    // Clients index results by position: keep them in input order whatever order the engine used.
    if (Array.isArray(answer.data)) (answer.data as Array<{ index: number }>).sort((a, b) => a.index - b.index);
  },
  estimate: (call) => ({ promptTokens: estimateInputTokens(call.body.input), completionTokens: 0 }),
};

export function embeddings(c: Context<GatewayEnv>, services: Services): Promise<Response> {
  return serveBilled(c, services, EMBEDDINGS);
}
