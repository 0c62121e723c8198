import type { MiddlewareHandler } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { headerOf } from '../../shared/http/request.js';
import type { KeyService } from '../keys/service.js';

/**
 * Requires a live API key (`Authorization: Bearer <key>` only; `x-api-key` is
 * not read). Keys come from the request-path cache (`catalog/request-path-cache.ts`),
 * not the store: a write through this process drops it at once, and other
 * replicas see the catalog version move within `TOLLGATE_CATALOG_POLL_MS`, so a
 * revocation or a limit edit applies everywhere within that poll.
 */
export function requireKey(keys: KeyService): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const caller = await keys.authenticate(headerOf(c, 'authorization')).catch((error: unknown) => {
      if (error instanceof GatewayError) throw error;
      throw new GatewayError('billing_unavailable', 'The gateway cannot check API keys right now. Retry with backoff.', {
        headers: { 'Retry-After': '2' },
        cause: error,
      });
    });
    c.set('caller', caller);
    await next();
  };
}
