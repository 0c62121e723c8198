import type { Hono } from 'hono';
import { z } from 'zod';
import type { ClusterRow, ClusterService, NodeRow } from '../clusters/service.js';
import type { GatewayEnv, SignedInActor } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { readBody, readQuery } from '../http/validate.js';
import { offsetOf, paged, pageQuery } from './pagination.js';

/** A DNS name the cluster's public URLs live under, e.g. `train.example.com`. */
const domain = z.string().trim().toLowerCase().max(253).regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/, 'Must be a domain name such as train.example.com.');
const createClusterBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  profile: z.string().min(1).max(100),
  nodes: z.int().min(1).max(1000),
  public_domain: domain,
});
const clustersQuery = z.object({ include_deleted: z.enum(['true', 'false']).default('false') }).and(pageQuery(['created_at'] as const));

export function clusterView({ cluster, nodes }: { cluster: ClusterRow; nodes?: NodeRow[] }) {
  return {
    id: cluster.id,
    name: cluster.name,
    org_id: cluster.orgId,
    profile: cluster.profile,
    public_domain: cluster.publicDomain,
    state: cluster.state,
    created_by: cluster.createdBy,
    created_at: cluster.createdAt.toISOString(),
    deleted_at: cluster.deletedAt?.toISOString() ?? null,
    ...(nodes ? { nodes: nodes.map((node) => ({ id: node.id, address: node.address })) } : {}),
  };
}

/**
 * An organization's clusters under the generic API (`/api/v1/clusters`,
 * `/v1/clusters`): everyone in the organization sees them (and may apply
 * stacks to them, once runs land); owners and admins create and delete them.
 * Platform admins see and manage every organization's.
 *
 * @example
 * registerClusterRoutes(api, clusterService);
 */
export function registerClusterRoutes(api: Hono<GatewayEnv>, clusters: ClusterService): void {
  const scope = (actor: SignedInActor) => (actor.platformAdmin ? null : actor.orgId);
  const assertManages = (actor: SignedInActor) => {
    if (actor.role === 'member' && !actor.platformAdmin) throw new GatewayError('forbidden', 'Only owners and admins create and delete clusters.');
  };

  api.get('/clusters', async (c) => {
    const query = readQuery(c, clustersQuery);
    const { rows, total } = await clusters.list(scope(c.get('actor')), { offset: offsetOf(query.page, query.limit), limit: query.limit, includeDeleted: query.include_deleted === 'true' });
    return c.json(paged(rows.map((cluster) => clusterView({ cluster })), total, query.page, query.limit));
  });

  api.post('/clusters', async (c) => {
    const actor = c.get('actor');
    assertManages(actor);
    const body = await readBody(c, createClusterBody);
    const created = await clusters.create({ orgId: actor.orgId, name: body.name, profile: body.profile, nodeCount: body.nodes, publicDomain: body.public_domain, createdBy: actor.userId });
    return c.json(clusterView(created), 201);
  });

  api.get('/clusters/:id', async (c) => c.json(clusterView(await clusters.get(c.req.param('id'), scope(c.get('actor'))))));

  api.delete('/clusters/:id', async (c) => {
    const actor = c.get('actor');
    await clusters.get(c.req.param('id'), scope(actor));
    assertManages(actor);
    await clusters.delete(c.req.param('id'), scope(actor));
    return c.body(null, 204);
  });
}
