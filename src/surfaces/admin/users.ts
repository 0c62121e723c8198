import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import { userView } from '../api/users.js';
import * as body from './schemas.js';
import * as view from './views.js';

/**
 * Every user of every organization, for the operator (`/admin/v1/users`):
 * list (or one organization's, `org_id`), read, change (a platform admin
 * too), delete. Users are made in an organization: `orgs.ts`.
 *
 * @example
 * admin.route('/users', usersRoutes(deps));
 */
export function usersRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const users = new Hono<GatewayEnv>();
  users.get('/', async (c) => {
    const { org_id: orgId } = readQuery(c, body.operatorUsersQuery);
    if (orgId) await deps.orgs.get(orgId);
    const { rows } = await deps.users.list(orgId ?? null, { offset: 0, limit: 10_000, sort: 'created_at' });
    return c.json(view.listOf(rows.map(userView)));
  });
  users.get('/:id', async (c) => c.json(userView(await deps.users.get(c.req.param('id')))));
  users.patch('/:id', async (c) => {
    const input = await readBody(c, body.operatorUpdateUserBody);
    const user = await deps.users.update(c.req.param('id'), {
      name: input.name,
      email: input.email,
      password: input.password,
      role: input.role,
      platformAdmin: input.platform_admin,
    });
    return c.json(userView(user));
  });
  users.delete('/:id', async (c) => {
    await deps.users.delete(c.req.param('id'));
    return c.body(null, 204);
  });

  return users;
}
