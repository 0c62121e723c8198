import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { V1Deps } from './deps.js';
import { serveBilled } from '../../gateway/requests/billed-request.js';
import { responsesEndpoint } from '../../gateway/requests/responses/index.js';

/**
 * `POST /v1/responses`: OpenAI's Responses API, a billed request whose
 * endpoint is `gateway/requests/responses/`, kept in `deps.responseStore`
 * unless `store: false` (read back by `stored-responses.ts`). Errors are the
 * gateway's /v1 envelope, which OpenAI's clients read.
 *
 * @example
 * v1.route('/responses', responsesRoutes(deps));
 */
export function responsesRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  const endpoint = responsesEndpoint({
    store: deps.responseStore,
    conversations: deps.conversationStore,
    log: deps.log,
  });
  // `background: true` is queued and answered at once (`gateway/requests/responses/background.ts`).
  routes.post('/', (c) => serveBilled(c, deps, endpoint, deps.backgroundResponses));
  return routes;
}
