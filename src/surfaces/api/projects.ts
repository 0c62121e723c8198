import type { Hono } from 'hono';
import { z } from 'zod';
import { PROJECT_VISIBILITIES } from '../../shared/db/schema.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import { canManageProject, canSeeProject, canSetBudget } from '../../platform/people/permissions.js';
import { budgetBody, budgetsOf, budgetView } from '../budgets.js';
import { chargesWritten } from '../fresh-charges.js';
import { PROJECT_SORTS, type ProjectRow, type ProjectService } from '../../platform/orgs/projects.js';
import type { ApiDeps } from './deps.js';
import { atLeastOne, name } from './fields.js';
import { offsetOf, paged, pageQuery } from './pagination.js';
import { apiResource, type ClientOf } from './resource.js';

const createProjectBody = z.strictObject({
  name,
  description: z.string().max(2000).optional(),
  visibility: z.enum(PROJECT_VISIBILITIES).optional(),
});
const updateProjectBody = z
  .strictObject({ name, description: z.string().max(2000), visibility: z.enum(PROJECT_VISIBILITIES) })
  .partial()
  .refine(atLeastOne(['name', 'description', 'visibility']), {
    message: 'Send at least one of name, description, visibility.',
    path: ['body'],
  });
const projectsQuery = pageQuery(PROJECT_SORTS);

/** A project as every answer shows one. */
export function projectView(project: ProjectRow) {
  return {
    id: project.id,
    name: project.name,
    description: project.description,
    visibility: project.visibility,
    org_id: project.orgId,
    created_by: project.createdBy,
    created_at: project.createdAt.toISOString(),
  };
}

/**
 * Projects under the generic API (`/api/v1/projects`, `/v1/projects`): members see public projects
 * and their own, owners and admins all of their organization's; the creator, owners and admins
 * change them. A project's budget (`/{id}/budget`) is seen by whoever sees the project and set by
 * the organization's owners.
 *
 * @example
 * mountResource(api, '/projects', projectsRoutes(deps, clientOf));
 */
export function projectsRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const projects = apiResource(deps, clientOf);
  const service = deps.projects;
  projects.get('/', async (c) => {
    const { page, limit, sort } = readQuery(c, projectsQuery);
    const { rows, total } = await service.list(c.get('actor'), { offset: offsetOf(page, limit), limit, sort });
    return c.json(paged(rows.map(projectView), total, page, limit));
  });

  projects.post('/', async (c) => {
    const body = await readBody(c, createProjectBody);
    return c.json(
      projectView(await service.create({ ...body, orgId: c.get('actor').orgId, createdBy: c.get('actor').userId })),
      201,
    );
  });

  projects.get('/:id', async (c) =>
    c.json(projectView(await visibleProject(service, c.get('actor'), c.req.param('id')))),
  );

  projects.put('/:id', async (c) => {
    const project = await managedProject(service, c.get('actor'), c.req.param('id'));
    const body = await readBody(c, updateProjectBody);
    return c.json(projectView(await service.update(project.id, body)));
  });

  projects.get('/:id/budget', chargesWritten(deps.applier), async (c) => {
    const project = await visibleProject(service, c.get('actor'), c.req.param('id'));
    return c.json(budgetView(await deps.budgets.get('project', project.id), deps.config.currency));
  });

  projects.put('/:id/budget', async (c) => {
    const project = await visibleProject(service, c.get('actor'), c.req.param('id'));
    if (!canSetBudget(c.get('actor'), project.orgId))
      throw new GatewayError('forbidden', "Only the organization's owners set budgets.");
    const budgets = budgetsOf(await readBody(c, budgetBody));
    return c.json(budgetView(await deps.budgets.set('project', project.id, budgets), deps.config.currency));
  });

  projects.delete('/:id', async (c) => {
    const project = await managedProject(service, c.get('actor'), c.req.param('id'));
    await service.delete(project.id);
    return c.body(null, 204);
  });

  return projects;
}

async function visibleProject(projects: ProjectService, actor: SignedInActor, id: string): Promise<ProjectRow> {
  const project = await projects.get(id);
  if (!canSeeProject(actor, project)) throw new GatewayError('not_found', `Project ${id} does not exist.`);
  return project;
}

async function managedProject(projects: ProjectService, actor: SignedInActor, id: string): Promise<ProjectRow> {
  const project = await visibleProject(projects, actor, id);
  if (!canManageProject(actor, project))
    throw new GatewayError('forbidden', "Only the project's creator, owners and admins change it.");
  return project;
}
