import type { MiddlewareHandler } from 'hono';
import type { GatewayEnv } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import type { KeyService } from '../keys/service.js';

/**
 * Requires a live API key (`Authorization: Bearer <key>` only; `x-api-key` is
 * not read). Keys are read from the store on every request, so a revocation or
 * a limit edit applies to the next request on every replica.
 */
export function requireKey(keys: KeyService): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const caller = await keys.authenticate(c.req.header('authorization')).catch((error: unknown) => {
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
