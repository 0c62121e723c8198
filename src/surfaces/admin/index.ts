import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES } from '../../shared/http/request.js';
import { refuseNul } from '../../shared/http/refuse-nul.js';
import type { AdminDeps } from './deps.js';
import { operatorAuth } from './auth.js';
import { conversionRatesRoutes } from './conversion-rates.js';
import { costsRoutes } from './costs.js';
import { rateCardsRoutes } from './rate-cards.js';
import { enginesRoutes } from './engines.js';
import { flowRoutes } from './flow.js';
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
 * app.route('/admin/v1', createAdminRoutes(deps));
 */
export function createAdminRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const admin = new Hono<GatewayEnv>();
  admin.use(
    '*',
    refuseNul(),
    operatorAuth(deps.adminToken),
    limitBody(MANAGEMENT_MAX_BODY_BYTES, deps.config.oversizeDrain),
  );
  admin.route('/orgs', orgsRoutes(deps));
  admin.route('/orgs', ledgerRoutes(deps));
  admin.route('/users', usersRoutes(deps));
  admin.route('/keys', keysRoutes(deps));
  admin.route('/projects', projectsRoutes(deps));
  admin.route('/models', modelsRoutes(deps));
  admin.route('/prices', pricesRoutes(deps));
  admin.route('/engines', enginesRoutes(deps));
  admin.route('/flow', flowRoutes(deps));
  admin.route('/profiles', profilesRoutes(deps));
  admin.route('/nodes', nodesRoutes(deps));
  admin.route('/rate-cards', rateCardsRoutes(deps));
  admin.route('/conversion-rates', conversionRatesRoutes(deps));
  admin.route('/usage', usageRoutes(deps));
  // The report and its CSV twin (`/costs`, `/costs.csv`): one resource whose two paths are
  // siblings, not nested.
  admin.route('/', costsRoutes(deps));
  return admin;
}
