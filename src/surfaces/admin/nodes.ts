import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * Nodes (`/admin/v1/nodes`): the machines clusters are allocated from, with
 * how the platform reaches them (SSH user, port, key, pinned host key),
 * checked once when added or changed (`platform/clusters/node-access.ts`),
 * and the release of a node a deleted cluster's key is still on
 * (`platform/clusters/node-maintenance.ts`).
 *
 * @example
 * admin.route('/nodes', nodesRoutes(deps));
 */
export function nodesRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const nodes = new Hono<GatewayEnv>();
  nodes.post('/', async (c) => {
    const input = await readBody(c, body.createNodeBody);
    const ssh = input.ssh && {
      user: input.ssh.user,
      port: input.ssh.port,
      privateKey: input.ssh.private_key,
      hostKeyFingerprint: input.ssh.host_key_fingerprint,
      runUser: input.ssh.run_user,
    };
    return c.json(
      view.nodeView(
        await deps.clusters.addNode({ profile: input.profile, address: input.address, access: input.access, ssh }),
      ),
      201,
    );
  });
  nodes.get('/', async (c) => c.json(view.listOf((await deps.clusters.listNodes()).map(view.nodeView))));
  nodes.patch('/:id', async (c) => {
    const { ssh } = await readBody(c, body.updateNodeBody);
    const change = {
      user: ssh.user,
      port: ssh.port,
      privateKey: ssh.private_key,
      hostKeyFingerprint: ssh.host_key_fingerprint,
      runUser: ssh.run_user,
    };
    return c.json(view.nodeView(await deps.nodeMaintenance.changeAccess(c.req.param('id'), change)));
  });
  // The body is optional: none is `{"force": false}`.
  nodes.post('/:id/release', async (c) => {
    const { force } = (await c.req.text()).trim() ? await readBody(c, body.releaseNodeBody) : { force: false };
    return c.json(view.nodeView(await deps.nodeMaintenance.release(c.req.param('id'), { force })));
  });

  return nodes;
}
