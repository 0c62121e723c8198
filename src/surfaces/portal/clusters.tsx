import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { ClusterPage, ClustersPage } from './clusters-pages.js';
import type { PortalDeps } from './session.js';

/**
 * Clusters (`/portal/clusters`): the organization's, with their nodes, each
 * node's key state, and their runs.
 *
 * @example
 * portal.route('/clusters', clustersRoutes(deps));
 */
export function clustersRoutes(deps: PortalDeps): Hono<GatewayEnv> {
  const clusters = new Hono<GatewayEnv>();
  const { services } = deps;
  const scopeOf = (actor: SignedInActor) => (actor.platformAdmin ? null : actor.orgId);

  clusters.get('/', async (c) => {
    const actor = await deps.signedIn(c);
    const { rows } = await services.clusters.list(scopeOf(actor), { offset: 0, limit: 100, includeDeleted: false });
    const counts = new Map<string, number>();
    for (const node of await services.clusters.listNodes()) if (node.clusterId) counts.set(node.clusterId, (counts.get(node.clusterId) ?? 0) + 1);
    return c.html(<ClustersPage viewer={deps.viewerOf(actor)} clusters={rows.map((cluster) => ({ cluster, nodeCount: counts.get(cluster.id) ?? 0 }))} />);
  });

  clusters.get('/:id', async (c) => {
    const actor = await deps.signedIn(c);
    const { cluster, nodes } = await services.clusters.get(c.req.param('id'), scopeOf(actor));
    const { rows } = await services.runs.list(actor, cluster.id, { offset: 0, limit: 100 });
    return c.html(<ClusterPage viewer={deps.viewerOf(actor)} cluster={cluster} nodes={nodes} keys={await services.clusterIdentity.rowsOf(cluster.id)} runs={rows} />);
  });
  return clusters;
}
