import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { OperatorFairSharePage } from './operator-fair-share-pages.js';
import { operatorOnly } from './operator-orgs.js';
import type { PortalSession } from './session.js';
import type { PortalDeps } from './deps.js';

/**
 * The fleet's fair share for platform admins (`/portal/operator/fair-share`): each organization's
 * share of the tokens served now, and who waits for room in which band, as this gateway replica
 * sees it (what `GET /admin/v1/flow` answers). 404 for anyone else.
 *
 * @example
 * portal.route('/operator/fair-share', operatorFairShareRoutes(deps, session));
 */
export function operatorFairShareRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const routes = new Hono<GatewayEnv>();
  routes.get('/', async (c) => {
    const actor = operatorOnly(await session.signedIn(c));
    const organizations = await deps.orgs.list();
    const names = new Map(organizations.map((org) => [org.id, { name: org.name, weight: org.shareWeight }]));
    return c.html(
      <OperatorFairSharePage
        viewer={session.viewerOf(actor)}
        enabled={deps.flow.settings.enabled}
        snapshot={deps.flow.snapshot()}
        organizations={names}
      />,
    );
  });
  return routes;
}
