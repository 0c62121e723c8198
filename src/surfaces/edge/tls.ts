import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { Services } from '../../services.js';

/**
 * For a TLS terminator that gets certificates on demand (Caddy's `ask`, see
 * compose/Caddyfile): `GET /tls/allowed?domain=NAME` answers 200 for the
 * gateway's own host name and the public hosts of applied runs, 404 for any
 * other name.
 *
 * @example
 * app.route('/tls', tlsRoutes(services));
 */
export function tlsRoutes(services: Services): Hono<GatewayEnv> {
  const tls = new Hono<GatewayEnv>();
  const ownHost = services.config.publicUrl ? new URL(services.config.publicUrl).hostname : null;
  tls.get('/allowed', (c) => {
    const domain = (c.req.query('domain') ?? '').toLowerCase();
    return domain && (domain === ownHost || services.publicHosts.serves(domain))
      ? c.body(null, 200)
      : c.body(null, 404);
  });
  return tls;
}
