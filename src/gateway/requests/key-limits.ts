import type { MiddlewareHandler } from 'hono';
import { withinStoreTimeout } from '../../shared/db/timeout.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { GateKeeper } from '../admission/gate-keeper.js';

/**
 * The routes that are not billed but read a body or the store (`POST /v1/messages/count_tokens`,
 * the stored-response routes: `GET`, `DELETE`, `input_items`) count against the key's limits as
 * every request does: admitted through the gate like a billed request (requests per minute,
 * concurrency; no tokens, no hold, so no budget either: they cost nothing) before the body or the
 * store is read, released when the answer is made. A 429 costs the database and the parser nothing.
 *
 * @example
 * routes.get('/:id', requireKey(keys), admittedByKeyLimits(gateKeeper), handler);
 */
export function admittedByKeyLimits(gateKeeper: GateKeeper): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const admitting = gateKeeper.admit({
      requestId: c.get('requestId'),
      caller: c.get('caller'),
      estimatedTokens: 0,
      holdNanos: null,
    });
    const ticket = await withinStoreTimeout(admitting).catch((error: unknown) => {
      if (error instanceof GatewayError) throw error;
      // Timed out: if the gate admits it after all, its slot is given back at once.
      admitting.then(
        (late) => gateKeeper.release(late, { actualTokens: 0, cost: null }),
        () => {},
      );
      throw new GatewayError(
        'limits_unavailable',
        'The gateway cannot check rate limits right now. Retry with backoff.',
        {
          headers: { 'Retry-After': '1' },
          cause: error,
        },
      );
    });
    for (const [name, value] of Object.entries(ticket.headers)) c.header(name, value);
    try {
      await next();
    } finally {
      await gateKeeper.release(ticket, { actualTokens: 0, cost: null });
    }
  };
}
