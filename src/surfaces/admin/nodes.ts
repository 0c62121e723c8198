import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody } from '../../shared/http/validate.js';
import type { Services } from '../../services.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * Nodes (`/admin/v1/nodes`): the machines clusters are allocated from, with
 * how the platform reaches them (SSH user, port, key, pinned host key),
 * checked once when added (`platform/clusters/node-access.ts`).
 *
 * @example
 * admin.route('/nodes', nodesRoutes(services));
 */
export function nodesRoutes(services: Services): Hono<GatewayEnv> {
  const nodes = new Hono<GatewayEnv>();
  nodes.post('/', async (c) => {
    const input = await readBody(c, body.createNodeBody);
    const ssh = input.ssh && { user: input.ssh.user, port: input.ssh.port, privateKey: input.ssh.private_key, hostKeyFingerprint: input.ssh.host_key_fingerprint, runUser: input.ssh.run_user };
    return c.json(view.nodeView(await services.clusters.addNode({ profile: input.profile, address: input.address, access: input.access, ssh })), 201);
  });
  nodes.get('/', async (c) => c.json(view.listOf((await services.clusters.listNodes()).map(view.nodeView))));

  return nodes;
}
