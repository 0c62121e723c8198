import { Hono } from 'hono';
import { z } from 'zod';
import { ROLES } from '../../shared/db/schema.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { emailField } from '../../platform/people/email.js';
import { passwordField } from '../../platform/people/passwords.js';
import { assertCanCreate, assertCanDelete, assertCanUpdate } from '../../platform/people/permissions.js';
import { UsersPage } from './people-pages.js';
import { type PortalSession, DONE_NOTICES, type PortalContext, problems } from './session.js';
import type { PortalDeps } from './deps.js';

const userForm = z.object({
  name: z.string().trim().min(1, 'Give a name.').max(200),
  email: emailField,
  password: passwordField,
  role: z.enum(ROLES),
});

/**
 * The organization's people (`/portal/users`): list, add, change a role,
 * delete, with the rules of `platform/people/permissions.ts` (a refusal is
 * shown on the page).
 *
 * @example
 * portal.route('/users', usersRoutes(deps, session));
 */
export function usersRoutes(deps: PortalDeps, session: PortalSession): Hono<GatewayEnv> {
  const users = new Hono<GatewayEnv>();
  const usersPage = (c: PortalContext, actor: SignedInActor, extra: PageExtra = {}, status: PageStatus = 200) =>
    usersPageOf(deps, session, c, actor, extra, status);
  const changeUsers = (c: PortalContext, actor: SignedInActor, change: () => Promise<unknown>, done: string) =>
    changeUsersOf(deps, session, c, actor, change, done);

  users.get('/', async (c) => {
    const actor = await session.signedIn(c);
    return usersPage(c, actor, { notice: DONE_NOTICES[c.req.query('done') ?? ''] });
  });

  users.post('/', async (c) => {
    const actor = await session.signedIn(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const parsed = userForm.safeParse(form);
    if (!parsed.success) return usersPage(c, actor, { error: problems(parsed.error) }, 400);
    return changeUsers(
      c,
      actor,
      async () => {
        assertCanCreate(actor, actor.orgId, parsed.data.role);
        await deps.users.create({ orgId: actor.orgId, ...parsed.data });
      },
      'user-added',
    );
  });

  users.post('/:id/role', async (c) => {
    const actor = await session.signedIn(c);
    const form = await c.req.parseBody();
    session.checkToken(actor, form._csrf);
    const role = z.enum(ROLES).safeParse(form.role);
    if (!role.success) return usersPage(c, actor, { error: 'Choose a role: owner, admin or member.' }, 400);
    const subject = await deps.users.get(c.req.param('id'));
    return changeUsers(
      c,
      actor,
      async () => {
        assertCanUpdate(actor, subject, { role: role.data });
        await deps.users.update(subject.id, { role: role.data });
      },
      'role-saved',
    );
  });

  users.post('/:id/delete', async (c) => {
    const actor = await session.signedIn(c);
    session.checkToken(actor, (await c.req.parseBody())._csrf);
    const subject = await deps.users.get(c.req.param('id'));
    return changeUsers(
      c,
      actor,
      async () => {
        assertCanDelete(actor, subject);
        await deps.users.delete(subject.id);
      },
      'user-deleted',
    );
  });
  return users;
}

type PageExtra = { error?: string; notice?: string };
type PageStatus = 200 | 400 | 403 | 409;

async function usersPageOf(
  deps: PortalDeps,
  session: PortalSession,
  c: PortalContext,
  actor: SignedInActor,
  extra: PageExtra,
  status: PageStatus,
) {
  const { rows } = await deps.users.list(actor.orgId, { offset: 0, limit: 100, sort: 'name' });
  return c.html(<UsersPage viewer={session.viewerOf(actor)} actor={actor} users={rows} {...extra} />, status);
}

/**
 * Makes a change to users and goes back to the page saying `done`; a rule
 * of `people/permissions.ts` or of the user service that refuses it (403,
 * 409) is shown on the page instead.
 */
async function changeUsersOf(
  deps: PortalDeps,
  session: PortalSession,
  c: PortalContext,
  actor: SignedInActor,
  change: () => Promise<unknown>,
  done: string,
) {
  try {
    await change();
  } catch (error) {
    if (!(error instanceof GatewayError) || (error.status !== 403 && error.status !== 409)) throw error;
    return usersPageOf(deps, session, c, actor, { error: error.message }, error.status);
  }
  return c.redirect(`/portal/users?done=${done}`, 303);
}
