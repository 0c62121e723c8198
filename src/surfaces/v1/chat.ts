import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { V1Deps } from './deps.js';
import { serveBilled } from '../../gateway/requests/billed-request.js';
import { CHAT } from '../../gateway/requests/chat.js';

/**
 * `POST /v1/chat/completions`, JSON or SSE: a billed request whose endpoint is
 * `gateway/requests/chat.ts`.
 *
 * @example
 * v1.route('/chat', chatRoutes(deps));
 */
export function chatRoutes(deps: V1Deps): Hono<GatewayEnv> {
  const chat = new Hono<GatewayEnv>();
  // Billed routes authenticate in authorize(), in the same read as the model and its price; the
  // wallet is checked by reserve().
  chat.post('/completions', (c) => serveBilled(c, deps, CHAT));
  return chat;
}
