import type { Context, MiddlewareHandler } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { headerOf } from '../../shared/http/request.js';
import type { KeyService } from '../keys/service.js';

/**
 * The key a request presents: `Authorization: Bearer <key>`, or, on the
 * Anthropic routes only (`x-api-key` is what Anthropic's SDK sends for its
 * `apiKey`; `ANTHROPIC_AUTH_TOKEN` sends Bearer), `x-api-key: <key>` when there is
 * no Authorization header.
 */
export function keyHeaderOf(c: Context<GatewayEnv>, acceptsApiKeyHeader = false): string | undefined {
  const authorization = headerOf(c, 'authorization');
  if (authorization !== undefined || !acceptsApiKeyHeader) return authorization;
  const apiKey = headerOf(c, 'x-api-key');
  return apiKey === undefined ? undefined : `Bearer ${apiKey}`;
}

/**
 * Requires a live API key (`Authorization: Bearer <key>`; `x-api-key` too when
 * `acceptsApiKeyHeader`, see `keyHeaderOf`). Keys come from the request-path cache
 * (`catalog/request-path-cache.ts`), not the store: a write through this process drops it at once,
 * and other replicas see the catalog version move within `TOLLGATE_CATALOG_POLL_MS`, so a
 * revocation or a limit edit applies everywhere within that poll.
 */
export function requireKey(keys: KeyService, acceptsApiKeyHeader = false): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const caller = await keys.authenticate(keyHeaderOf(c, acceptsApiKeyHeader)).catch((error: unknown) => {
      if (error instanceof GatewayError) throw error;
      throw new GatewayError(
        'billing_unavailable',
        'The gateway cannot check API keys right now. Retry with backoff.',
        {
          headers: { 'Retry-After': '2' },
          cause: error,
        },
      );
    });
    c.set('caller', caller);
    await next();
  };
}
