import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { createClusterBody } from '../api/clusters.js';
import { ClusterPage, ClustersPage } from './clusters-pages.js';
import { type PortalSession, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';

const manages = (actor: SignedInActor) => actor.platformAdmin || actor.role !== 'member';
const scopeOf = (actor: SignedInActor) => (actor.platformAdmin ? null : actor.orgId);

/**
 * Clusters (`/portal/clusters`): the organization's, with their nodes, each
 * node's key state, and their runs; owners and admins create one from free
 * nodes of a hardware profile.
 *
 * @example
 * portal.route('/clusters', clustersRoutes(deps, session));
 */
export function clustersRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const clusters = new Hono<GatewayEnv>();

  const listPage = (c: PortalContext, actor: SignedInActor, extra: ListExtra = {}) =>
    clustersListPage(deps, session, c, actor, extra);

  clusters.get('/', async (c) => listPage(c, await session.signedIn(c)));

  // Owners and admins create a cluster here with the same checks and service as `POST
  // /api/v1/clusters`.
  clusters.post('/', async (c) => {
    const actor = await session.signedIn(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    if (!manages(actor)) throw new GatewayError('forbidden', 'Only owners and admins create clusters.');
    const text = (name: string) => (typeof form[name] === 'string' ? form[name] : '');
    const fields = {
      name: text('name'),
      profile: text('profile'),
      nodes: text('nodes'),
      public_domain: text('public_domain'),
    };
    const parsed = createClusterBody.safeParse({
      ...fields,
      nodes: /^\d{1,6}$/.test(fields.nodes) ? Number(fields.nodes) : fields.nodes,
    });
    if (!parsed.success) return listPage(c, actor, { error: problems(parsed.error), form: fields, status: 400 });
    const body = parsed.data;
    try {
      const created = await deps.clusters.create({
        orgId: actor.orgId,
        name: body.name,
        profile: body.profile,
        nodeCount: body.nodes,
        publicDomain: body.public_domain,
        createdBy: actor.userId,
      });
      return c.redirect(`/portal/clusters/${created.cluster.id}`, 303);
    } catch (error) {
      // A refusal the user can fix (no such profile, too few free nodes, a domain taken) is shown
      // on the form.
      if (error instanceof GatewayError && error.status < 500)
        return listPage(c, actor, { error: error.message, form: fields, status: error.status === 409 ? 409 : 400 });
      throw error;
    }
  });

  clusters.get('/:id', async (c) => {
    const actor = await session.signedIn(c);
    const { cluster, nodes } = await deps.clusters.get(c.req.param('id'), scopeOf(actor));
    const { rows } = await deps.runs.list(actor, cluster.id, { offset: 0, limit: 100 });
    return c.html(
      <ClusterPage
        viewer={session.viewerOf(actor)}
        cluster={cluster}
        nodes={nodes}
        keys={await deps.clusterIdentity.rowsOf(cluster.id)}
        runs={rows}
      />,
    );
  });
  return clusters;
}

/**
 * What the clusters' page shows besides the list after a refused form: the error, the form as
 * filled, and the status.
 */
interface ListExtra {
  error?: string;
  form?: Record<string, string>;
  status?: 400 | 409;
}

/**
 * The clusters' page: the clusters `actor` sees with their node counts, and for owners and admins
 * the form with each profile's free nodes.
 */
async function clustersListPage(
  deps: PortalDeps,
  session: PortalSession,
  c: PortalContext,
  actor: SignedInActor,
  extra: ListExtra,
) {
  const [{ rows }, nodes, profiles] = await Promise.all([
    deps.clusters.list(scopeOf(actor), { offset: 0, limit: 100, includeDeleted: false }),
    deps.clusters.listNodes(),
    deps.clusters.listProfiles(),
  ]);
  const counts = new Map<string, number>();
  const free = new Map<string, number>();
  for (const node of nodes) {
    if (node.clusterId) counts.set(node.clusterId, (counts.get(node.clusterId) ?? 0) + 1);
    else if (!node.releasingClusterId) free.set(node.profile, (free.get(node.profile) ?? 0) + 1);
  }
  const creatable = manages(actor)
    ? {
        profiles: profiles.map((p) => ({
          name: p.name,
          free: free.get(p.name) ?? 0,
          gpus: p.gpusPerNode,
          gpuModel: p.gpuModel,
        })),
        form: extra.form ?? {},
      }
    : null;
  return c.html(
    <ClustersPage
      viewer={session.viewerOf(actor)}
      clusters={rows.map((cluster) => ({ cluster, nodeCount: counts.get(cluster.id) ?? 0 }))}
      create={creatable}
      error={extra.error}
    />,
    extra.status ?? 200,
  );
}
