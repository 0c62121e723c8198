import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { V1Deps } from './deps.js';
import { serveBilled } from '../../gateway/requests/billed-request.js';
import { responsesEndpoint } from '../../gateway/requests/responses/index.js';
import { responsesInputTokens } from '../../gateway/requests/responses/input-tokens.js';
import { compactEndpoint } from '../../gateway/requests/responses/compact.js';
import { requireKey } from '../../gateway/requests/auth.js';
import { admittedByKeyLimits } from '../../gateway/requests/key-limits.js';
import { readCountBody } from './count-body.js';

/**
 * `POST /v1/responses`: OpenAI's Responses API, a billed request whose
 * endpoint is `gateway/requests/responses/`, kept in `deps.responseStore`
 * unless `store: false` (read back by `stored-responses.ts`); and
 * `POST /v1/responses/input_tokens`, its input counted as it is billed; and
 * `POST /v1/responses/compact`, a conversation compacted by the engine. Errors are the
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
  // Codex CLI's compaction of a long session: one engine call, billed as a turn.
  const compact = compactEndpoint({ store: deps.responseStore, log: deps.log });
  routes.post('/compact', (c) => serveBilled(c, deps, compact));
  const countInput = responsesInputTokens({
    store: deps.responseStore,
    conversations: deps.conversationStore,
    log: deps.log,
    config: deps.config,
    requestPathCache: deps.requestPathCache,
    fleet: deps.fleet,
  });
  // Counted against the key's requests per minute and concurrency before its body is read, and its
  // body bounded.
  routes.post('/input_tokens', requireKey(deps.keys), admittedByKeyLimits(deps.gateKeeper), async (c) => {
    const body = await readCountBody(c, deps);
    const tokens = await countInput({ requestId: c.get('requestId'), caller: c.get('caller'), body });
    return c.json({ object: 'response.input_tokens', input_tokens: tokens });
  });
  return routes;
}
