import { type Context, Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { renderError } from '../../shared/http/render.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readCountBody } from './count-body.js';
import type { V1Deps } from './deps.js';
import { requireKey } from '../../gateway/requests/auth.js';
import { serveBilled } from '../../gateway/requests/billed-request.js';
import { MESSAGES } from '../../gateway/requests/messages/index.js';
import { chatBodyOf } from '../../gateway/requests/messages/translate.js';
import { countTokens } from '../../gateway/requests/messages/count.js';
import { admittedByKeyLimits } from '../../gateway/requests/key-limits.js';

/**
 * `POST /v1/messages` (Anthropic's Messages, a billed request whose endpoint is
 * `gateway/requests/messages/`) and `POST /v1/messages/count_tokens`. Errors
 * carry `"type":"error"` at the top and Anthropic's error types, so
 * Anthropic's clients read them; the gateway's code stays in `error.code`.
 *
 * @example
 * v1.route('/messages', messagesRoutes(deps));
 */
export function messagesRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  routes.onError((error, c) => anthropicError(error, c, deps));
  routes.post('/', (c) => serveBilled(c, deps, MESSAGES));
  // Counted against the key's requests per minute and concurrency before its body is read, and its
  // body bounded.
  routes.post('/count_tokens', requireKey(deps.keys, true), admittedByKeyLimits(deps.gateKeeper), async (c) => {
    const body = await readCountBody(c, deps);
    MESSAGES.validate({ max_tokens: 1, ...body }, deps.config);
    return c.json({ input_tokens: await countTokens(deps, body, chatBodyOf) });
  });
  return routes;
}

/** Anthropic's error types, by status. */
function anthropicType(status: number): string {
  const types: Record<number, string> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    402: 'billing_error',
    403: 'permission_error',
    404: 'not_found_error',
    413: 'request_too_large',
    429: 'rate_limit_error',
    503: 'overloaded_error',
  };
  return types[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/**
 * The gateway's envelope (logged and headed as on every /v1 route), with `"type":"error"` beside it
 * and Anthropic's `error.type`.
 */
async function anthropicError(error: unknown, c: Context<GatewayEnv>, deps: V1Deps): Promise<Response> {
  const rendered = renderError(error, c, deps.log);
  const envelope = (await rendered.json()) as { error: Record<string, unknown> };
  // A saturated fleet is Anthropic's 529 overloaded_error, which its clients retry.
  const status = error instanceof GatewayError && error.code === 'overloaded' ? 529 : rendered.status;
  const type = status === 529 ? 'overloaded_error' : anthropicType(status);
  return c.json({ type: 'error', error: { ...envelope.error, type } }, status as 400);
}
