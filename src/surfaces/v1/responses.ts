import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { Services } from '../../services.js';
import { serveBilled } from '../../gateway/requests/billed-request.js';
import { responsesEndpoint } from '../../gateway/requests/responses/index.js';

/**
 * `POST /v1/responses`: OpenAI's Responses API, a billed request whose
 * endpoint is `gateway/requests/responses/`, kept in `services.responseStore`
 * unless `store: false` (read back by `stored-responses.ts`). Errors are the
 * gateway's /v1 envelope, which OpenAI's clients read.
 *
 * @example
 * v1.route('/responses', responsesRoutes(services));
 */
export function responsesRoutes(services: Services): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  const endpoint = responsesEndpoint({ store: services.responseStore, log: services.log });
  routes.post('/', (c) => serveBilled(c, services, endpoint));
  return routes;
}
