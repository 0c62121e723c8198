import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES, refuseNul } from '../../shared/http/request.js';
import type { Services } from '../../services.js';
import { operatorAuth } from './auth.js';
import { conversionRatesRoutes } from './conversion-rates.js';
import { costsRoutes } from './costs.js';
import { rateCardsRoutes } from './rate-cards.js';
import { enginesRoutes } from './engines.js';
import { keysRoutes } from './keys.js';
import { projectsRoutes } from './projects.js';
import { ledgerRoutes } from './ledger.js';
import { modelsRoutes } from './models.js';
import { nodesRoutes } from './nodes.js';
import { orgsRoutes } from './orgs.js';
import { pricesRoutes } from './prices.js';
import { profilesRoutes } from './profiles.js';
import { usageRoutes } from './usage.js';
import { usersRoutes } from './users.js';

/**
 * The management API, mounted by the app under `/admin/v1`: what the CLI
 * calls. Every route needs the operator token; errors are thrown as
 * `GatewayError` and rendered by the app's `onError`, so no handler writes
 * error JSON itself. Each resource is a file of this folder mounted here.
 *
 * @example
 * app.route('/admin/v1', createAdminRoutes(services));
 */
export function createAdminRoutes(services: Services): Hono<GatewayEnv> {
  const admin = new Hono<GatewayEnv>();
  admin.use(
    '*',
    refuseNul(),
    operatorAuth(services.adminToken),
    limitBody(MANAGEMENT_MAX_BODY_BYTES, services.config.oversizeDrain),
  );
  admin.route('/orgs', orgsRoutes(services));
  admin.route('/orgs', ledgerRoutes(services));
  admin.route('/users', usersRoutes(services));
  admin.route('/keys', keysRoutes(services));
  admin.route('/projects', projectsRoutes(services));
  admin.route('/models', modelsRoutes(services));
  admin.route('/prices', pricesRoutes(services));
  admin.route('/engines', enginesRoutes(services));
  admin.route('/profiles', profilesRoutes(services));
  admin.route('/nodes', nodesRoutes(services));
  admin.route('/rate-cards', rateCardsRoutes(services));
  admin.route('/conversion-rates', conversionRatesRoutes(services));
  admin.route('/usage', usageRoutes(services));
  // The report and its CSV twin (`/costs`, `/costs.csv`): one resource whose two paths are
  // siblings, not nested.
  admin.route('/', costsRoutes(services));
  return admin;
}
