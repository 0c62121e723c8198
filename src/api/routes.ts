import { type Context, Hono } from 'hono';
import { z } from 'zod';
import { PROJECT_VISIBILITIES, ROLES } from '../db/schema.js';
import type { GatewayEnv, SignedInActor } from '../http/context.js';
import { GatewayError } from '../http/errors.js';
import { limitBody, MANAGEMENT_MAX_BODY_BYTES, requireJsonBody } from '../http/request.js';
import { readBody, readQuery } from '../http/validate.js';
import { PASSWORD_MAX, PASSWORD_MIN } from '../people/passwords.js';
import { assertCanCreate, assertCanDelete, assertCanSee, assertCanUpdate, canManageProject, canSeeProject } from '../people/permissions.js';
import { USER_SORTS, type UserRow } from '../people/users.js';
import { PROJECT_SORTS, ProjectService, type ProjectRow } from '../platform/projects.js';
import type { Services } from '../services.js';
import { apiAccess } from './access.js';
import { registerStackRoutes } from './stacks-routes.js';
import { registerClusterRoutes } from './clusters-routes.js';
import { registerRunRoutes } from '../runs/routes.js';
import { COST_PATHS, registerCostRoutes } from '../costs/routes.js';
import { renderApiError } from './errors.js';
import { offsetOf, paged, pageQuery } from './pagination.js';

const name = z.string().trim().min(1).max(200);
const email = z.string().trim().max(254).pipe(z.email('Must be an email address.'));
const password = z.string().min(PASSWORD_MIN, `Must be at least ${PASSWORD_MIN} characters.`).max(PASSWORD_MAX, `Must be at most ${PASSWORD_MAX} characters.`);
const atLeastOne = (fields: string[]) => (body: Record<string, unknown>) => fields.some((field) => body[field] !== undefined);

export const createUserBody = z.strictObject({ name, email, password, role: z.enum(ROLES).optional(), org_id: z.string().min(1).max(100).optional() });
export const updateUserBody = z
  .strictObject({ name, email, password, current_password: z.string().max(PASSWORD_MAX).optional(), role: z.enum(ROLES) })
  .partial()
  .refine(atLeastOne(['name', 'email', 'password', 'role']), { message: 'Send at least one of name, email, password, role.', path: ['body'] });
export const createProjectBody = z.strictObject({ name, description: z.string().max(2000).optional(), visibility: z.enum(PROJECT_VISIBILITIES).optional() });
export const updateProjectBody = z
  .strictObject({ name, description: z.string().max(2000), visibility: z.enum(PROJECT_VISIBILITIES) })
  .partial()
  .refine(atLeastOne(['name', 'description', 'visibility']), { message: 'Send at least one of name, description, visibility.', path: ['body'] });
const usersQuery = pageQuery(USER_SORTS);
const projectsQuery = pageQuery(PROJECT_SORTS);

/** A user as every answer shows one: never a password or its hash. */
export function userView(user: UserRow) {
  return { id: user.id, name: user.name, email: user.email, role: user.role, org_id: user.orgId, platform_admin: user.platformAdmin, created_at: user.createdAt.toISOString() };
}

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

/** The paths of the generic API under its mount point. */
// Hono's '/users/*' also matches '/users' itself.
export const API_PATHS = ['/me', '/users/*', '/projects/*', '/clusters/*', '/runs/*', ...COST_PATHS];

/** Whether a path belongs to the generic API or sign-in (their errors use the generic envelope), wherever it is mounted. */
export function isGenericApiPath(path: string): boolean {
  return /^\/(api\/v1|auth)(\/|$)|^\/v1\/(users|projects|me|stacks|clusters|runs|billing|orgs)(\/|$)/.test(path);
}

/**
 * The generic management API (the second spec's users and projects),
 * mounted at `/api/v1` and at `/v1`. Errors use its own envelope with
 * upper-case codes (`api/errors.ts`); who may do what is
 * `people/permissions.ts`.
 *
 * @example
 * app.route('/api/v1', createApiRoutes(services, clientOf));
 */
export function createApiRoutes(services: Services, clientOf: (c: Context) => { address: string; https: boolean }): Hono<GatewayEnv> {
  const api = new Hono<GatewayEnv>();
  const projects = new ProjectService(services.db, () => services.admissionCache.invalidate());
  api.onError((error, c) => renderApiError(error, c, services.log));
  // Per path, not '*': mounted at /v1 too, these must not reach /v1's gateway routes.
  for (const path of API_PATHS) api.use(path, limitBody(MANAGEMENT_MAX_BODY_BYTES), apiAccess(services, clientOf), requireJsonBody());

  api.get('/me', (c) => c.json(userView(c.get('actor').user)));
  registerStackRoutes(api, services, clientOf);
  registerClusterRoutes(api, services.clusters);
  registerRunRoutes(api, services);
  registerCostRoutes(api, services);

  api.get('/users', async (c) => {
    const actor = c.get('actor');
    const { page, limit, sort } = readQuery(c, usersQuery);
    const { rows, total } = await services.users.list(actor.platformAdmin ? null : actor.orgId, { offset: offsetOf(page, limit), limit, sort });
    return c.json(paged(rows.map(userView), total, page, limit));
  });

  api.get('/users/:id', async (c) => c.json(userView(await visibleUser(services, c.get('actor'), c.req.param('id')))));

  api.post('/users', async (c) => {
    const actor = c.get('actor');
    const body = await readBody(c, createUserBody);
    const orgId = body.org_id ?? actor.orgId;
    const role = body.role ?? 'member';
    assertCanCreate(actor, orgId, role);
    const user = await services.users.create({ orgId, name: body.name, email: body.email, password: body.password, role });
    return c.json(userView(user), 201);
  });

  api.put('/users/:id', async (c) => {
    const actor = c.get('actor');
    const subject = await visibleUser(services, actor, c.req.param('id'));
    const body = await readBody(c, updateUserBody);
    assertCanUpdate(actor, subject, { role: body.role });
    const self = actor.userId === subject.id;
    if (body.password !== undefined && self) {
      // Your own password changes only with the current one: a stolen session or key cannot lock you out.
      if (body.current_password === undefined || !(await services.passwords.verify(body.current_password, subject.passwordHash))) {
        throw new GatewayError('invalid_request', 'Invalid request body.', { details: [{ field: 'current_password', message: 'Send your current password to change it.' }] });
      }
    }
    const updated = await services.users.update(subject.id, { name: body.name, email: body.email, password: body.password, role: body.role }, self ? actor.sessionHash : undefined);
    return c.json(userView(updated));
  });

  api.delete('/users/:id', async (c) => {
    const actor = c.get('actor');
    const subject = await visibleUser(services, actor, c.req.param('id'));
    assertCanDelete(actor, subject);
    await services.users.delete(subject.id);
    return c.body(null, 204);
  });

  api.get('/projects', async (c) => {
    const { page, limit, sort } = readQuery(c, projectsQuery);
    const { rows, total } = await projects.list(c.get('actor'), { offset: offsetOf(page, limit), limit, sort });
    return c.json(paged(rows.map(projectView), total, page, limit));
  });

  api.post('/projects', async (c) => {
    const body = await readBody(c, createProjectBody);
    return c.json(projectView(await projects.create(c.get('actor'), body)), 201);
  });

  api.get('/projects/:id', async (c) => c.json(projectView(await visibleProject(projects, c.get('actor'), c.req.param('id')))));

  api.put('/projects/:id', async (c) => {
    const project = await managedProject(projects, c.get('actor'), c.req.param('id'));
    const body = await readBody(c, updateProjectBody);
    return c.json(projectView(await projects.update(project.id, body)));
  });

  api.delete('/projects/:id', async (c) => {
    const project = await managedProject(projects, c.get('actor'), c.req.param('id'));
    await projects.delete(project.id);
    return c.body(null, 204);
  });

  return api;
}

async function visibleUser(services: Services, actor: SignedInActor, id: string): Promise<UserRow> {
  const user = await services.users.get(id);
  assertCanSee(actor, user);
  return user;
}

async function visibleProject(projects: ProjectService, actor: SignedInActor, id: string): Promise<ProjectRow> {
  const project = await projects.get(id);
  if (!canSeeProject(actor, project)) throw new GatewayError('not_found', `Project ${id} does not exist.`);
  return project;
}

async function managedProject(projects: ProjectService, actor: SignedInActor, id: string): Promise<ProjectRow> {
  const project = await visibleProject(projects, actor, id);
  if (!canManageProject(actor, project)) throw new GatewayError('forbidden', 'Only the project\'s creator, owners and admins change it.');
  return project;
}
