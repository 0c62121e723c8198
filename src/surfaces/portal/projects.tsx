import { Hono } from 'hono';
import { z } from 'zod';
import { PROJECT_VISIBILITIES } from '../../shared/db/schema.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { canManageProject, canSeeProject } from '../../platform/people/permissions.js';
import { ProjectsPage } from './people-pages.js';
import { type PortalSession, DONE_NOTICES, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';

const projectForm = z.object({
  name: z.string().trim().min(1, 'Give the project a name.').max(200),
  description: z.string().max(2000).optional(),
  visibility: z.enum(PROJECT_VISIBILITIES).optional(),
});
/**
 * Projects (`/portal/projects`): list, add, delete, with the API's permissions.
 *
 * @example
 * portal.route('/projects', projectsRoutes(deps, session));
 */
export function projectsRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const projects = new Hono<GatewayEnv>();
  const service = deps.projects;
  const projectsPage = async (
    c: PortalContext,
    actor: SignedInActor,
    extra: { error?: string; notice?: string } = {},
    status: 200 | 400 = 200,
  ) => {
    const { rows } = await service.list(actor, { offset: 0, limit: 100, sort: 'name' });
    return c.html(<ProjectsPage viewer={session.viewerOf(actor)} actor={actor} projects={rows} {...extra} />, status);
  };

  projects.get('/', async (c) => {
    const actor = await session.signedIn(c);
    return projectsPage(c, actor, { notice: DONE_NOTICES[c.req.query('done') ?? ''] });
  });

  projects.post('/', async (c) => {
    const actor = await session.signedIn(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const parsed = projectForm.safeParse(form);
    if (!parsed.success) return projectsPage(c, actor, { error: problems(parsed.error) }, 400);
    await service.create({ ...parsed.data, orgId: actor.orgId, createdBy: actor.userId });
    return c.redirect('/portal/projects?done=project-added', 303);
  });

  projects.post('/:id/delete', async (c) => {
    const actor = await session.signedIn(c);
    session.checkToken(actor, (await c.req.parseBody())._csrf);
    const project = await service.get(c.req.param('id'));
    if (!canSeeProject(actor, project)) throw new GatewayError('not_found', 'There is no such project.');
    if (!canManageProject(actor, project))
      throw new GatewayError('forbidden', "Only the project's creator, owners and admins delete it.");
    await service.delete(project.id);
    return c.redirect('/portal/projects?done=project-deleted', 303);
  });
  return projects;
}
