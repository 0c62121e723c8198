import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { V1Deps } from './deps.js';
import { serveBilled } from '../../gateway/requests/billed-request.js';
import { EMBEDDINGS } from '../../gateway/requests/embeddings.js';

/**
 * `POST /v1/embeddings`: a billed request whose endpoint is `gateway/requests/embeddings.ts`.
 *
 * @example
 * v1.route('/embeddings', embeddingsRoutes(deps));
 */
export function embeddingsRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  routes.post('/', (c) => serveBilled(c, deps, EMBEDDINGS));
  return routes;
}
