import type { Hono } from 'hono';
import { z } from 'zod';
import { identityOf, type NodeKeyRow } from '../../platform/clusters/node-keys.js';
import type { ClusterRow, NodeRow } from '../../platform/clusters/service.js';
import type { ApiDeps } from './deps.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import { offsetOf, paged, pageQuery } from './pagination.js';
import { apiResource, type ClientOf } from './resource.js';

/** A DNS name the cluster's public URLs live under, e.g. `train.example.com`. */
const domain = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(
    /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/,
    'Must be a domain name such as train.example.com.',
  );
/** Creating a cluster: the portal's form is checked by the same schema. */
export const createClusterBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  profile: z.string().min(1).max(100),
  nodes: z.int().min(1).max(1000),
  public_domain: domain,
});
const clustersQuery = z
  .object({ include_deleted: z.enum(['true', 'false']).default('false') })
  .and(pageQuery(['created_at'] as const));

/**
 * A cluster as the API shows it. `status` is `provisioning` while its key is
 * not yet on every node the platform reaches, `ready` once it is, `deleted`
 * after; each node says how its key stands (`identity`).
 */
export function clusterView({ cluster, nodes, keys }: { cluster: ClusterRow; nodes?: NodeRow[]; keys?: NodeKeyRow[] }) {
  const identity = keys ? identityOf(cluster.state, keys) : null;
  return {
    id: cluster.id,
    name: cluster.name,
    org_id: cluster.orgId,
    profile: cluster.profile,
    public_domain: cluster.publicDomain,
    state: cluster.state,
    ...(identity ? { status: identity.status } : {}),
    created_by: cluster.createdBy,
    created_at: cluster.createdAt.toISOString(),
    deleted_at: cluster.deletedAt?.toISOString() ?? null,
    ...(nodes
      ? {
          nodes: nodes.map((node) => ({
            id: node.id,
            address: node.address,
            ssh_user: node.runUser,
            ssh_port: node.sshPort,
            identity: identity?.nodeIdentity(node.id) ?? { state: 'unmanaged', error: null, attempts: 0 },
          })),
        }
      : {}),
  };
}

/**
 * An organization's clusters under the generic API (`/api/v1/clusters`,
 * `/v1/clusters`): everyone in the organization sees them (and may apply
 * stacks to them, once runs land); owners and admins create and delete them.
 * Platform admins see and manage every organization's.
 *
 * @example
 * mountResource(api, '/clusters', clustersRoutes(deps, clientOf));
 */
export function clustersRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const api = apiResource(deps, clientOf);
  const { clusters, clusterIdentity: identity, publicHosts } = deps;
  const shown = async (found: { cluster: ClusterRow; nodes: NodeRow[] }) =>
    clusterView({ ...found, keys: await identity.rowsOf(found.cluster.id) });
  const scope = (actor: SignedInActor) => (actor.platformAdmin ? null : actor.orgId);
  const assertManages = (actor: SignedInActor) => {
    if (actor.role === 'member' && !actor.platformAdmin)
      throw new GatewayError('forbidden', 'Only owners and admins create and delete clusters.');
  };

  api.get('/', async (c) => {
    const query = readQuery(c, clustersQuery);
    const { rows, total } = await clusters.list(scope(c.get('actor')), {
      offset: offsetOf(query.page, query.limit),
      limit: query.limit,
      includeDeleted: query.include_deleted === 'true',
    });
    return c.json(
      paged(
        rows.map((cluster) => clusterView({ cluster })),
        total,
        query.page,
        query.limit,
      ),
    );
  });

  api.post('/', async (c) => {
    const actor = c.get('actor');
    assertManages(actor);
    const body = await readBody(c, createClusterBody);
    const created = await clusters.create({
      orgId: actor.orgId,
      name: body.name,
      profile: body.profile,
      nodeCount: body.nodes,
      publicDomain: body.public_domain,
      createdBy: actor.userId,
    });
    return c.json(await shown(created), 201);
  });

  api.get('/:id', async (c) => c.json(await shown(await clusters.get(c.req.param('id'), scope(c.get('actor'))))));

  api.delete('/:id', async (c) => {
    const actor = c.get('actor');
    await clusters.get(c.req.param('id'), scope(actor));
    assertManages(actor);
    await clusters.delete(c.req.param('id'), scope(actor));
    // Its public hosts stop routing here at once (other processes within their refresh, 5 s), and
    // its key leaves its nodes before the answer.
    await publicHosts.refresh();
    await identity.removeNow(c.req.param('id'));
    return c.body(null, 204);
  });
  return api;
}
