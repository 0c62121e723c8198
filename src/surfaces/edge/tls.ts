import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { EdgeDeps } from './deps.js';

/**
 * For a TLS terminator that gets certificates on demand (Caddy's `ask`, see
 * compose/Caddyfile): `GET /tls/allowed?domain=NAME` answers 200 for the
 * gateway's own host name and the public hosts of applied runs, 404 for any
 * other name.
 *
 * @example
 * app.route('/tls', tlsRoutes(services));
 */
export function tlsRoutes(deps: EdgeDeps): Hono<GatewayEnv> {
  const tls = new Hono<GatewayEnv>();
  const ownHost = deps.config.publicUrl ? new URL(deps.config.publicUrl).hostname : null;
  tls.get('/allowed', (c) => {
    const domain = (c.req.query('domain') ?? '').toLowerCase();
    return domain && (domain === ownHost || deps.publicHosts.serves(domain)) ? c.body(null, 200) : c.body(null, 404);
  });
  return tls;
}
