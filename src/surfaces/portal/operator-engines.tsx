import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { OperatorEnginesPage } from './operator-engines-pages.js';
import { operatorOnly } from './operator-orgs.js';
import type { PortalDeps } from './session.js';

/**
 * Engines for platform admins (`/portal/operator/engines`): every engine and
 * its replicas from the fleet, what `GET /admin/v1/engines` answers. 404 for
 * anyone else.
 *
 * @example
 * portal.route('/operator/engines', operatorEnginesRoutes(deps));
 */
export function operatorEnginesRoutes(deps: PortalDeps): Hono<GatewayEnv> {
  const engines = new Hono<GatewayEnv>();
  engines.get('/', async (c) => {
    const actor = operatorOnly(await deps.signedIn(c));
    return c.html(<OperatorEnginesPage viewer={deps.viewerOf(actor)} engines={deps.services.fleet.status()} />);
  });
  return engines;
}
