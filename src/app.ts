import { Hono } from 'hono';
import { operatorAuth } from './surfaces/admin/auth.js';
import { createAdminRoutes } from './surfaces/admin/index.js';
import type { GatewayEnv } from './shared/http/context.js';
import { renderError, renderNotFound } from './shared/http/render.js';
import { requestId } from './shared/http/request.js';
import type { Services } from './services.js';
import { createV1Routes } from './surfaces/v1/index.js';
import { createApiRoutes } from './surfaces/api/index.js';
import { unknownApiPaths } from './surfaces/api/resource.js';
import { clientInfo } from './shared/http/client-address.js';
import { createAuthRoutes } from './surfaces/auth/index.js';
import { ASSETS } from './surfaces/portal/assets.js';
import { createPortalRoutes } from './surfaces/portal/index.js';
import { runHostsProxy } from './surfaces/edge/run-hosts.js';
import { tlsRoutes } from './surfaces/edge/tls.js';

/**
 * The whole HTTP surface, each part mounted from `surfaces/`: /v1 for
 * clients, /api/v1 (its resources also under /v1) and /auth for people,
 * /portal for browsers, /admin/v1 for operators; and here /health and
 * /health/ready for load balancers and orchestrators, /metrics for
 * Prometheus. Each surface renders its errors in its own envelope; what
 * reaches this app's handlers is the gateway's.
 *
 * @example
 * serve({ fetch: createApp(services).fetch, port: 8080 });
 */
export function createApp(services: Services): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();
  app.use(requestId());
  // A run's public URL (`https://<stack>.<cluster domain>`) is another service's: its requests go
  // to the node.
  app.use(runHostsProxy(services.publicHosts));
  // Metrics and traces of every request (observability/observer.ts); not even installed when both
  // are off.
  if (services.observer.active) app.use(services.observer.middleware());
  // A draining gateway asks keep-alive clients to go elsewhere, and load balancers to stop sending.
  app.use(async (c, next) => {
    await next();
    if (services.inFlight.draining) c.header('connection', 'close');
  });
  app.route('/tls', tlsRoutes(services));
  // Browsers ask the root for an icon (a JSON answer opened in a tab); portal pages link it
  // themselves.
  app.get('/favicon.ico', (c) =>
    c.body(ASSETS.svg.body, 200, { 'content-type': ASSETS.svg.type, 'cache-control': 'public, max-age=86400' }),
  );
  app.get('/health', (c) =>
    services.inFlight.draining ? c.json({ status: 'draining' }, 503) : c.json({ status: 'ok' }),
  );
  // Readiness for orchestrators: 503 while draining, or while the database, Redis or some model's
  // engines are away.
  app.get('/health/ready', async (c) => {
    const { ready, body } = await services.readiness();
    return c.json(body, ready ? 200 : 503);
  });
  // On the main port to the operator token, unless TOLLGATE_METRICS_PORT serves it on a port of its
  // own.
  const { metrics: metricsOn, metricsPort } = services.config.observability;
  if (metricsOn && metricsPort === null) {
    app.get('/metrics', operatorAuth(services.adminToken), async (c) =>
      c.body(await services.metrics.registry.metrics(), 200, { 'content-type': services.metrics.registry.contentType }),
    );
  }
  const clientOf = clientInfo(services.config.people.trustedProxies);
  const api = createApiRoutes(services, clientOf);
  app.route('/api/v1', api);
  app.route('/api/v1', unknownApiPaths(services, clientOf));
  app.route('/auth', createAuthRoutes(services, clientOf));
  app.route('/portal', createPortalRoutes(services, clientOf));
  // People arrive at the root with a browser: the portal is there. API clients get the usual 404.
  app.get('/', (c) =>
    c.req.header('accept')?.includes('text/html') ? c.redirect('/portal', 303) : renderNotFound(c, services.log),
  );
  // The spec's sample request calls the generic API under /v1: its resources are served there too,
  // beside the gateway's routes.
  app.route('/v1', api);
  app.route('/v1', createV1Routes(services));
  app.route('/admin/v1', createAdminRoutes(services));
  // Each surface answers its own errors and unknown paths in its envelope; what is left is the
  // gateway's.
  app.notFound((c) => renderNotFound(c, services.log));
  app.onError((error, c) => renderError(error, c, services.log));
  return app;
}
