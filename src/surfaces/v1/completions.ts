import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { V1Deps } from './deps.js';
import { serveBilled } from '../../gateway/requests/billed-request.js';
import { COMPLETIONS } from '../../gateway/requests/completions.js';

/**
 * `POST /v1/completions`, JSON or SSE: a billed request whose endpoint is
 * `gateway/requests/completions.ts`.
 *
 * @example
 * v1.route('/completions', completionsRoutes(deps));
 */
export function completionsRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  routes.post('/', (c) => serveBilled(c, deps, COMPLETIONS));
  return routes;
}
