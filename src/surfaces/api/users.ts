import type { Hono } from 'hono';
import { z } from 'zod';
import { ROLES } from '../../shared/db/schema.js';
import type { GatewayEnv } from '../../shared/http/context.js';
import type { SignedInActor } from '../context.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readBody, readQuery } from '../../shared/http/validate.js';
import { emailField } from '../../platform/people/email.js';
import { PASSWORD_MAX, passwordField } from '../../platform/people/passwords.js';
import { assertCanCreate, assertCanDelete, assertCanSee, assertCanUpdate } from '../../platform/people/permissions.js';
import { USER_SORTS, type UserRow } from '../../platform/people/users.js';
import type { ApiDeps } from './deps.js';
import { atLeastOne, name } from './fields.js';
import { offsetOf, paged, pageQuery } from './pagination.js';
import { apiResource, type ClientOf } from './resource.js';

const createUserBody = z.strictObject({
  name,
  email: emailField,
  password: passwordField,
  role: z.enum(ROLES).optional(),
  org_id: z.string().min(1).max(100).optional(),
});
const updateUserBody = z
  .strictObject({
    name,
    email: emailField,
    password: passwordField,
    current_password: z.string().max(PASSWORD_MAX).optional(),
    role: z.enum(ROLES),
  })
  .partial()
  .refine(atLeastOne(['name', 'email', 'password', 'role']), {
    message: 'Send at least one of name, email, password, role.',
    path: ['body'],
  });
const usersQuery = pageQuery(USER_SORTS);

/** A user as every answer shows one: never a password or its hash. */
export function userView(user: UserRow) {
  return {
    id: user.id,
    name: user.name,
    email: user.email,
    role: user.role,
    org_id: user.orgId,
    platform_admin: user.platformAdmin,
    created_at: user.createdAt.toISOString(),
  };
}

/**
 * Users under the generic API (`/api/v1/users`, `/v1/users`): everyone sees
 * their organization's, platform admins everyone's; who may create, change
 * and delete whom is `platform/people/permissions.ts`.
 *
 * @example
 * mountResource(api, '/users', usersRoutes(deps, clientOf));
 */
export function usersRoutes(deps: ApiDeps, clientOf: ClientOf): Hono<GatewayEnv> {
  const users = apiResource(deps, clientOf);
  users.get('/', async (c) => {
    const actor = c.get('actor');
    const { page, limit, sort } = readQuery(c, usersQuery);
    const { rows, total } = await deps.users.list(actor.platformAdmin ? null : actor.orgId, {
      offset: offsetOf(page, limit),
      limit,
      sort,
    });
    return c.json(paged(rows.map(userView), total, page, limit));
  });

  users.get('/:id', async (c) => c.json(userView(await visibleUser(deps, c.get('actor'), c.req.param('id')))));

  users.post('/', async (c) => {
    const actor = c.get('actor');
    const body = await readBody(c, createUserBody);
    const orgId = body.org_id ?? actor.orgId;
    const role = body.role ?? 'member';
    assertCanCreate(actor, orgId, role);
    const user = await deps.users.create({
      orgId,
      name: body.name,
      email: body.email,
      password: body.password,
      role,
    });
    return c.json(userView(user), 201);
  });

  users.put('/:id', async (c) => {
    const actor = c.get('actor');
    const subject = await visibleUser(deps, actor, c.req.param('id'));
    const body = await readBody(c, updateUserBody);
    assertCanUpdate(actor, subject, { role: body.role });
    const self = actor.userId === subject.id;
    const signInChanges = body.password !== undefined || (body.email !== undefined && body.email !== subject.email);
    if (self && signInChanges) {
      // What you sign in with (password or email) changes only with your current password: a stolen
      // session or key cannot lock you out, nor probe for other organizations' emails.
      if (
        body.current_password === undefined ||
        !(await deps.passwords.verify(body.current_password, subject.passwordHash))
      ) {
        throw new GatewayError('invalid_request', 'Invalid request body.', {
          details: [
            { field: 'current_password', message: 'Send your current password to change your password or email.' },
          ],
        });
      }
    }
    const updated = await deps.users.update(
      subject.id,
      { name: body.name, email: body.email, password: body.password, role: body.role },
      self ? actor.sessionHash : undefined,
    );
    return c.json(userView(updated));
  });

  users.delete('/:id', async (c) => {
    const actor = c.get('actor');
    const subject = await visibleUser(deps, actor, c.req.param('id'));
    assertCanDelete(actor, subject);
    await deps.users.delete(subject.id);
    return c.body(null, 204);
  });

  return users;
}

async function visibleUser(deps: ApiDeps, actor: SignedInActor, id: string): Promise<UserRow> {
  const user = await deps.users.get(id);
  assertCanSee(actor, user);
  return user;
}
