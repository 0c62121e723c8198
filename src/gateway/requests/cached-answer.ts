import type { Context } from 'hono';
import { cacheKey } from '../cache/response-cache.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { describeError } from '../../shared/http/log.js';
import type { BilledDeps } from './endpoint.js';
import type { AuthorizedRequest } from './authorize.js';
import { cachesAnswers, recordCacheHit } from './billed-call.js';

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
};

/**
 * For a key with the response cache on: the cached answer to this request, as
 * JSON or as a stream like the original, marked `X-Tollgate-Cache: hit`; or
 * null (marked `miss`) when there is none. A cache that cannot be read is a
 * miss, never a failed request.
 */
export async function cachedAnswer(
  c: Context<GatewayEnv>,
  deps: BilledDeps,
  request: AuthorizedRequest,
): Promise<Response | null> {
  if (!cachesAnswers(request)) return null;
  // Computed once: the answer is kept under the same key (`settle`), and the body is the size of
  // the prompt.
  request.cacheKey = cacheKey(request.caller.orgId, request.endpoint, request.body);
  const hit = await deps.cache.get(request.cacheKey).catch((error: unknown) => {
    deps.log.warn('response cache read failed: treated as a miss', {
      requestId: request.requestId,
      ...describeError(error),
    });
    return null;
  });
  c.header('X-Tollgate-Cache', hit ? 'hit' : 'miss');
  deps.observer.cacheLookup(hit !== null);
  if (!hit) return null;
  await recordCacheHit(deps, request, hit);
  if (hit.kind === 'json') return c.body(hit.body, 200, { 'content-type': 'application/json' });
  return c.body(`${hit.events.map((event) => `data: ${event}\n\n`).join('')}data: [DONE]\n\n`, 200, SSE_HEADERS);
}
