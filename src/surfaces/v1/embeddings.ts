import { type Context, Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { estimateInputTokens } from '../../gateway/proxy/usage.js';
import type { Services } from '../../services.js';
import { type BilledEndpoint, serveBilled } from '../../gateway/requests/billed-request.js';

/**
 * POST /v1/embeddings. `encoding_format` (float or base64) goes to the engine
 * unchanged, so base64 vectors are relayed as the engine encoded them.
 */
export const EMBEDDINGS: BilledEndpoint = {
  task: 'embedding',
  path: '/embeddings',
  streams: () => false,
  // 1,024 floats a vector: found, checked and relayed as text, never parsed into numbers and written back.
  liftArrays: 'embedding',
  upstreamBody: (call, target) => ({ ...call.body, model: target.servedModelName }),
  shapeAnswer(answer) {
    // Clients index results by position: keep them in input order whatever order the engine used.
    if (Array.isArray(answer.data)) (answer.data as Array<{ index: number }>).sort((a, b) => a.index - b.index);
  },
  estimate: (call) => ({ promptTokens: estimateInputTokens(call.body.input), completionTokens: 0 }),
};

function embeddings(c: Context<GatewayEnv>, services: Services): Promise<Response> {
  return serveBilled(c, services, EMBEDDINGS);
}

/**
 * `POST /v1/embeddings`: a billed request, authenticated inside its admission.
 *
 * @example
 * v1.route('/embeddings', embeddingsRoutes(services));
 */
export function embeddingsRoutes(services: Services): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  routes.post('/', (c) => embeddings(c, services));
  return routes;
}
