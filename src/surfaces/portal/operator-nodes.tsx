import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { OperatorNodesPage } from './operator-nodes-pages.js';
import { operatorOnly } from './operator-orgs.js';
import type { PortalDeps } from './session.js';

/**
 * Nodes and hardware profiles for platform admins (`/portal/operator/nodes`),
 * what `GET /admin/v1/profiles` and `GET /admin/v1/nodes` answer (never a
 * node's credential). 404 for anyone else.
 *
 * @example
 * portal.route('/operator/nodes', operatorNodesRoutes(deps));
 */
export function operatorNodesRoutes(deps: PortalDeps): Hono<GatewayEnv> {
  const nodes = new Hono<GatewayEnv>();
  nodes.get('/', async (c) => {
    const actor = operatorOnly(await deps.signedIn(c));
    const [profiles, rows] = await Promise.all([deps.services.clusters.listProfiles(), deps.services.clusters.listNodes()]);
    return c.html(<OperatorNodesPage viewer={deps.viewerOf(actor)} profiles={profiles} nodes={rows} />);
  });
  return nodes;
}
