import { Hono } from 'hono';
import { cors } from 'hono/cors';
import type { GatewayEnv } from '../http/context.js';
import type { Services } from '../services.js';
import { transcriptions } from './audio.js';
import { requireKey } from './auth.js';
import { chatCompletions } from './chat.js';
import { embeddings } from './embeddings.js';
import { getModel, listModels } from './models.js';
import { pricing } from './pricing.js';
import { usageRequestList, usageSummary } from './usage.js';

/**
 * The public /v1 surface. Every route but GET /pricing needs a key; the key is
 * checked per route so that an unknown path answers 404, not 401.
 *
 * @example
 * app.route('/v1', createV1Routes(services));
 */
export function createV1Routes(services: Services): Hono<GatewayEnv> {
  const v1 = new Hono<GatewayEnv>();
  // Browsers may call /v1 from the allowed origins. Keys travel in Authorization, never in cookies,
  // so credentials are never allowed: a page can only use a key it was given.
  const origins = services.config.corsOrigins;
  if (origins === '*' || origins.length > 0) {
    v1.use(
      cors({
        origin: origins,
        allowMethods: ['GET', 'POST', 'OPTIONS'],
        exposeHeaders: EXPOSED_HEADERS,
        maxAge: 600,
      }),
    );
  }
  const auth = requireKey(services.keys);
  v1.get('/pricing', (c) => pricing(c, services));
  // Billed routes authenticate inside admit(), in the same read as model, price and balance.
  v1.post('/chat/completions', (c) => chatCompletions(c, services));
  v1.post('/embeddings', (c) => embeddings(c, services));
  v1.get('/models', auth, (c) => listModels(c, services));
  v1.get('/models/:id{.+}', auth, (c) => getModel(c, services));
  v1.post('/audio/transcriptions', auth, () => transcriptions());
  v1.get('/usage/summary', auth, (c) => usageSummary(c, services));
  v1.get('/usage/requests', auth, (c) => usageRequestList(c, services));
  return v1;
}

/** Response headers a browser client may read: the request id, limits, retry hints and the cache's verdict. */
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
