import { Hono } from 'hono';
import type { GatewayEnv } from '../../shared/http/context.js';
import { readBody } from '../../shared/http/validate.js';
import type { AdminDeps } from './deps.js';
import { budgetBody, budgetsOf, budgetView } from '../budgets.js';
import { chargesWritten } from '../fresh-charges.js';

/**
 * One project by its id (`/admin/v1/projects/{id}`): its budget (`/budget`: read with its spend,
 * set). Projects are made and listed in their organization: `orgs.ts`.
 *
 * @example
 * admin.route('/projects', projectsRoutes(deps));
 */
export function projectsRoutes(deps: AdminDeps): Hono<GatewayEnv> {
  const projects = new Hono<GatewayEnv>();
  const currency = deps.config.currency;
  projects.get('/:projectId/budget', chargesWritten(deps.applier), async (c) =>
    c.json(budgetView(await deps.budgets.get('project', c.req.param('projectId')), currency)),
  );
  projects.put('/:projectId/budget', async (c) => {
    const budgets = budgetsOf(await readBody(c, budgetBody));
    return c.json(budgetView(await deps.budgets.set('project', c.req.param('projectId'), budgets), currency));
  });
  return projects;
}
