import type { MiddlewareHandler } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { PageGate } from '../../shared/http/page-gate.js';
import type { SignedInActor } from '../context.js';
import type { PortalContext } from './session.js';

/**
 * The portal's middleware: a signed-in user's page (a GET, not an asset) runs in a turn of its
 * organization's, and the session it read is kept for the page (`c.get('actor')`).
 */
export function pageTurns(
  gate: PageGate,
  actorOf: (c: PortalContext) => Promise<SignedInActor | undefined>,
): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    if (c.req.method !== 'GET' || c.req.path.startsWith('/portal/assets/')) return next();
    const actor = await actorOf(c);
    if (!actor) return next();
    c.set('actor', actor);
    const leave = await gate.enter(actor.orgId);
    try {
      await next();
    } finally {
      leave();
    }
  };
}
