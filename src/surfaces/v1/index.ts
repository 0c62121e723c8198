import { Hono } from 'hono';
import { cors } from 'hono/cors';
import type { GatewayEnv } from '../../shared/http/context.js';
import { headerOf } from '../../shared/http/request.js';
import { refuseNul } from '../../shared/http/refuse-nul.js';
import type { V1Deps } from './deps.js';
import { audioRoutes } from './audio.js';
import { chatRoutes } from './chat.js';
import { completionsRoutes } from './completions.js';
import { embeddingsRoutes } from './embeddings.js';
import { messagesRoutes } from './messages.js';
import { modelsRoutes } from './models.js';
import { pricingRoutes } from './pricing.js';
import { responsesRoutes } from './responses.js';
import { storedResponseRoutes } from './stored-responses.js';
import { conversationRoutes } from './conversations.js';
import { filesRoutes } from './files.js';
import { batchesRoutes } from './batches.js';
import { usageRoutes } from './usage.js';
import { walletRoutes } from './wallet.js';

/**
 * The public /v1 surface: a file per resource, each a Hono sub-app mounted
 * here. Every route but GET /pricing needs a key; the key is checked per
 * route so that an unknown path answers 404, not 401.
 *
 * @example
 * app.route('/v1', createV1Routes(services));
 */
export function createV1Routes(deps: V1Deps): Hono<GatewayEnv> {
  const v1 = new Hono<GatewayEnv>();
  v1.use('*', refuseNul());
  // Browsers may call /v1 from the allowed origins. Keys travel in Authorization, never in cookies,
  // so credentials are never allowed: a page can only use a key it was given.
  const origins = deps.config.corsOrigins;
  if (origins === '*' || origins.length > 0) {
    const corsHeaders = cors({
      origin: origins,
      allowMethods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
      exposeHeaders: EXPOSED_HEADERS,
      maxAge: 600,
    });
    // A browser sends Origin with every cross-origin request, and no cache keeps a POST's answer: a
    // POST without one (an SDK, a server) has no use for CORS headers. Hono's cors writes them
    // before the route runs, which makes the route's answer be copied into a second, full Response:
    // about 7 % of a chat request's CPU (docs/benchmark.md#cpu-per-request).
    v1.use((c, next) =>
      c.req.method === 'POST' && headerOf(c, 'origin') === undefined ? next() : corsHeaders(c, next),
    );
  }
  v1.route('/pricing', pricingRoutes(deps));
  v1.route('/chat', chatRoutes(deps));
  v1.route('/completions', completionsRoutes(deps));
  v1.route('/embeddings', embeddingsRoutes(deps));
  v1.route('/messages', messagesRoutes(deps));
  v1.route('/responses', responsesRoutes(deps));
  v1.route('/responses', storedResponseRoutes(deps));
  v1.route('/conversations', conversationRoutes(deps));
  v1.route('/files', filesRoutes(deps));
  v1.route('/batches', batchesRoutes(deps));
  v1.route('/models', modelsRoutes(deps));
  v1.route('/audio', audioRoutes(deps));
  v1.route('/usage', usageRoutes(deps));
  v1.route('/wallet', walletRoutes(deps));
  return v1;
}

/**
 * Response headers a browser client may read: the request id, limits, retry hints and the cache's
 * verdict.
 */
const EXPOSED_HEADERS = [
  'x-request-id',
  'retry-after',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
  'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-tokens',
  'x-ratelimit-reset-tokens',
  'x-tollgate-cache',
];
