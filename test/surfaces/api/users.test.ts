import type { ApiErrorEnvelope } from '../../../src/surfaces/api/errors.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { apiAs, orgWithUsers, signIn, withCookie } from './harness.js';

const stores = await oneStore();

describe.each(stores)('generic API: users (%s)', (store) => {
  let gateway: TestGateway;

  beforeAll(async () => {
    // The lowest scrypt cost: these tests make many users.
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
  });
  afterAll(() => gateway?.close());

  it("pages with the spec's arithmetic: first, last, past the end, and the limit bounds", async () => {
    const { users } = await orgWithUsers(gateway, ['owner', ...Array<'member'>(24).fill('member')]);
    const api = apiAs(gateway, users[0]!.key);
    const first = await api('GET', '/users');
    expect(first.status).toBe(200);
    expect(first.body.pagination).toEqual({ page: 1, limit: 20, total: 25, pages: 2 });
    expect(first.body.data).toHaveLength(20);
    const last = await api('GET', '/users?page=3&limit=10');
    expect(last.body.pagination).toEqual({ page: 3, limit: 10, total: 25, pages: 3 });
    expect(last.body.data).toHaveLength(5);
    const past = await api('GET', '/users?page=4&limit=10');
    expect(past.status).toBe(200);
    expect(past.body).toEqual({ data: [], pagination: { page: 4, limit: 10, total: 25, pages: 3 } });
    // The pages together are every user once.
    const pages = await Promise.all([1, 2, 3].map((page) => api('GET', `/users?page=${page}&limit=10`)));
    const ids = pages.flatMap((p) => p.body.data.map((u: { id: string }) => u.id));
    expect(new Set(ids).size).toBe(25);
    expect((await api('GET', '/users?limit=100')).body.data).toHaveLength(25);
    expect((await api('GET', '/users?limit=1')).body.pagination).toEqual({ page: 1, limit: 1, total: 25, pages: 25 });
    for (const query of ['limit=101', 'limit=0', 'page=0', 'page=-1', 'limit=2.5', 'page=abc']) {
      const bad = await api('GET', `/users?${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.error.code).toBe('VALIDATION_ERROR');
      expect(bad.body.error.details).toEqual([{ field: query.split('=')[0], message: expect.any(String) }]);
    }
    const all = await api('GET', '/users?page=0&limit=500&sort=age');
    expect(all.body.error.details.map((d: { field: string }) => d.field)).toEqual(['page', 'limit', 'sort']);
  });

  it('sorts by created_at (default), name and email, either way', async () => {
    const { users } = await orgWithUsers(gateway, ['owner', 'member', 'member', 'admin']);
    const api = apiAs(gateway, users[0]!.key);
    const list = async (sort?: string) =>
      (await api('GET', `/users${sort ? `?sort=${sort}` : ''}`)).body.data as Array<{
        id: string;
        name: string;
        email: string;
        created_at: string;
      }>;
    const byDefault = await list();
    expect(byDefault.map((u) => u.id)).toEqual(users.map((u) => u.id));
    expect((await list('-created_at')).map((u) => u.id)).toEqual(users.map((u) => u.id).reverse());
    const names = (await list('name')).map((u) => u.name);
    expect(names).toEqual([...names].sort());
    expect((await list('-name')).map((u) => u.name)).toEqual([...names].reverse());
    const emails = (await list('email')).map((u) => u.email);
    expect(emails).toEqual([...emails].sort());
  });

  it('shows a user as {id, name, email, role, created_at}, never a password or its hash', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const me = await apiAs(gateway, users[0]!.key)('GET', `/users/${users[0]!.id}`);
    expect(me.status).toBe(200);
    expect(Object.keys(me.body).sort()).toEqual([
      'created_at',
      'email',
      'id',
      'name',
      'org_id',
      'platform_admin',
      'role',
    ]);
    expect(JSON.stringify(me.body)).not.toContain('scrypt');
  });

  it('reports every invalid field at once', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    const bad = await api('POST', '/users', {
      name: '',
      email: 'not-an-email',
      password: 'short',
      role: 'king',
      extra: true,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'email',
      'extra',
      'name',
      'password',
      'role',
    ]);
    const missing = await api('POST', '/users', {});
    expect(missing.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'email',
      'name',
      'password',
    ]);
    const tooLong = await api('POST', '/users', { name: 'x', email: 'long@example.com', password: 'p'.repeat(129) });
    expect(tooLong.body.error.details).toEqual([{ field: 'password', message: 'Must be at most 128 characters.' }]);
    expect((await api('PUT', `/users/${users[0]!.id}`, {})).body.error.code).toBe('VALIDATION_ERROR');
    const notJson = await api('POST', '/users', '{"name":');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('refuses a taken email, whatever its case, with CONFLICT', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    const created = await api('POST', '/users', {
      name: 'Grace',
      email: 'Grace.Hopper@Example.com',
      password: 'a-long-password',
    });
    expect(created.status).toBe(201);
    const again = await api('POST', '/users', {
      name: 'Grace 2',
      email: 'grace.hopper@example.COM',
      password: 'a-long-password',
    });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({
      code: 'CONFLICT',
      details: [{ field: 'email', message: expect.any(String) }],
    });
    // Signing in is case-insensitive too.
    expect((await signIn(gateway, 'GRACE.HOPPER@example.com', 'a-long-password')).status).toBe(200);
  });

  it("keeps organizations apart: nobody reads or changes another organization's users", async () => {
    const a = await orgWithUsers(gateway, ['owner', 'member']);
    const b = await orgWithUsers(gateway, ['owner']);
    const asB = apiAs(gateway, b.users[0]!.key);
    const listed = await asB('GET', '/users');
    expect(listed.body.data.map((u: { id: string }) => u.id)).toEqual([b.users[0]!.id]);
    const target = a.users[1]!.id;
    expect((await asB('GET', `/users/${target}`)).status).toBe(404);
    expect((await asB('PUT', `/users/${target}`, { name: 'taken over' })).status).toBe(404);
    expect((await asB('DELETE', `/users/${target}`)).status).toBe(404);
    expect(
      (
        await asB('POST', '/users', {
          name: 'x',
          email: `x-${Date.now()}@example.com`,
          password: 'a-long-password',
          org_id: a.orgId,
        })
      ).status,
    ).toBe(403);
    expect((await apiAs(gateway, a.users[0]!.key)('GET', `/users/${target}`)).body.name).toBe('member 1');
  });

  it('applies the role rules: members edit only themselves, admins never touch owners, only owners make owners', async () => {
    const { users } = await orgWithUsers(gateway, ['owner', 'admin', 'member', 'member']);
    const [owner, admin, member, other] = users as [
      (typeof users)[0],
      (typeof users)[0],
      (typeof users)[0],
      (typeof users)[0],
    ];
    const asMember = apiAs(gateway, member.key);
    expect((await asMember('PUT', `/users/${member.id}`, { name: 'Me, renamed' })).body.name).toBe('Me, renamed');
    expect((await asMember('PUT', `/users/${other.id}`, { name: 'x' })).status).toBe(403);
    expect((await asMember('PUT', `/users/${member.id}`, { role: 'admin' })).status).toBe(403);
    expect(
      (
        await asMember('POST', '/users', {
          name: 'x',
          email: `m-${Date.now()}@example.com`,
          password: 'a-long-password',
        })
      ).status,
    ).toBe(403);
    expect((await asMember('DELETE', `/users/${other.id}`)).status).toBe(403);
    const asAdmin = apiAs(gateway, admin.key);
    expect((await asAdmin('PUT', `/users/${owner.id}`, { name: 'x' })).status).toBe(403);
    expect((await asAdmin('PUT', `/users/${other.id}`, { role: 'owner' })).status).toBe(403);
    expect((await asAdmin('PUT', `/users/${other.id}`, { role: 'admin' })).body.role).toBe('admin');
    expect(
      (
        await asAdmin('POST', '/users', {
          name: 'x',
          email: `o-${Date.now()}@example.com`,
          password: 'a-long-password',
          role: 'owner',
        })
      ).status,
    ).toBe(403);
    expect((await asAdmin('DELETE', `/users/${owner.id}`)).status).toBe(403);
    const asOwner = apiAs(gateway, owner.key);
    const promoted = await asOwner('PUT', `/users/${member.id}`, { role: 'owner' });
    expect(promoted.body.role).toBe('owner');
    const created = await asOwner('POST', '/users', {
      name: 'New admin',
      email: `a-${Date.now()}@example.com`,
      password: 'a-long-password',
      role: 'admin',
    });
    expect(created.status).toBe(201);
    expect(created.body.role).toBe('admin');
  });

  it('never removes the last owner, by a role change or a delete', async () => {
    const { users } = await orgWithUsers(gateway, ['owner', 'admin']);
    const [owner, admin] = users as [(typeof users)[0], (typeof users)[0]];
    const asOwner = apiAs(gateway, owner.key);
    const demote = await asOwner('PUT', `/users/${owner.id}`, { role: 'admin' });
    expect(demote.status).toBe(409);
    expect(demote.body.error.code).toBe('CONFLICT');
    expect((await asOwner('DELETE', `/users/${owner.id}`)).status).toBe(409);
    // With a second owner, the first may step down.
    expect((await asOwner('PUT', `/users/${admin.id}`, { role: 'owner' })).status).toBe(200);
    expect((await asOwner('PUT', `/users/${owner.id}`, { role: 'member' })).body.role).toBe('member');
    const asNewOwner = apiAs(gateway, admin.key);
    expect((await asNewOwner('DELETE', `/users/${admin.id}`)).status).toBe(409);
  });

  it('deleting a user ends their sessions and revokes their keys at once', async () => {
    const { users } = await orgWithUsers(gateway, ['owner', 'member']);
    const [owner, member] = users as [(typeof users)[0], (typeof users)[0]];
    const session = await signIn(gateway, member.email, member.password);
    expect(session.status).toBe(200);
    expect((await withCookie(gateway, session.cookie!, 'GET', '/api/v1/me')).status).toBe(200);
    const models = () => fetch(`${gateway.baseURL}/models`, { headers: { authorization: `Bearer ${member.key}` } });
    expect((await models()).status).toBe(200);
    expect((await apiAs(gateway, owner.key)('DELETE', `/users/${member.id}`)).status).toBe(204);
    expect((await withCookie(gateway, session.cookie!, 'GET', '/api/v1/me')).status).toBe(401);
    expect((await models()).status).toBe(401);
    expect((await apiAs(gateway, member.key)('GET', '/me')).status).toBe(401);
    expect((await apiAs(gateway, owner.key)('GET', `/users/${member.id}`)).status).toBe(404);
    expect((await signIn(gateway, member.email, member.password)).status).toBe(401);
  });

  it("answers a store failure while finding a key's user as a server error, never as an invalid key", async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    const lookup = vi.spyOn(gateway.services.users, 'get').mockRejectedValueOnce(new Error('connection terminated'));
    try {
      const failed = await api('GET', '/me');
      expect(failed.status).toBe(500);
      expect(failed.body.error.code).not.toBe('UNAUTHORIZED');
      expect(JSON.stringify(failed.body)).not.toContain('connection terminated');
    } finally {
      lookup.mockRestore();
    }
    expect((await api('GET', '/me')).status).toBe(200);
  });

  it("a password change needs the current one, and ends the user's other sessions", async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const owner = users[0]!;
    const here = await signIn(gateway, owner.email, owner.password);
    const elsewhere = await signIn(gateway, owner.email, owner.password);
    const without = await withCookie(gateway, here.cookie!, 'PUT', `/api/v1/users/${owner.id}`, {
      password: 'a-brand-new-password',
    });
    expect(without.status).toBe(400);
    expect(without.body.error.details).toEqual([{ field: 'current_password', message: expect.any(String) }]);
    const changed = await withCookie(gateway, here.cookie!, 'PUT', `/api/v1/users/${owner.id}`, {
      password: 'a-brand-new-password',
      current_password: owner.password,
    });
    expect(changed.status).toBe(200);
    expect((await withCookie(gateway, here.cookie!, 'GET', '/api/v1/me')).status).toBe(200);
    expect((await withCookie(gateway, elsewhere.cookie!, 'GET', '/api/v1/me')).status).toBe(401);
    expect((await signIn(gateway, owner.email, owner.password)).status).toBe(401);
    expect((await signIn(gateway, owner.email, 'a-brand-new-password')).status).toBe(200);
  });

  it("changes your own email only with your current password; an owner sets a member's without it", async () => {
    const { users } = await orgWithUsers(gateway, ['owner', 'member']);
    const [owner, member] = users as [(typeof users)[0], (typeof users)[0]];
    const asMember = apiAs(gateway, member.key);
    const fresh = () => `moved-${Math.random().toString(36).slice(2, 10)}@example.com`;
    const without = await asMember('PUT', `/users/${member.id}`, { email: fresh() });
    expect(without.status).toBe(400);
    expect(without.body.error.details).toEqual([{ field: 'current_password', message: expect.any(String) }]);
    expect(
      (await asMember('PUT', `/users/${member.id}`, { email: fresh(), current_password: 'not-the-password' })).status,
    ).toBe(400);
    // Sending the email you have is no change: a client may PUT the user as it read it.
    expect(
      (await asMember('PUT', `/users/${member.id}`, { name: 'Same me', email: member.email.toUpperCase() })).status,
    ).toBe(200);
    const mine = fresh();
    expect(
      (await asMember('PUT', `/users/${member.id}`, { email: mine, current_password: member.password })).body.email,
    ).toBe(mine);
    expect((await signIn(gateway, mine, member.password)).status).toBe(200);
    const theirs = fresh();
    expect((await apiAs(gateway, owner.key)('PUT', `/users/${member.id}`, { email: theirs })).body.email).toBe(theirs);
    expect((await signIn(gateway, theirs, member.password)).status).toBe(200);
  });

  it('answers 409 for an email taken in another organization, to an owner adding a user and to a member changing their own (the accepted cost of unique emails)', async () => {
    const a = await orgWithUsers(gateway, ['owner']);
    const b = await orgWithUsers(gateway, ['owner', 'member']);
    const [ownerB, memberB] = b.users as [(typeof b.users)[0], (typeof b.users)[0]];
    const taken = a.users[0]!.email;
    const asOwnerB = apiAs(gateway, ownerB.key);
    const asMemberB = apiAs(gateway, memberB.key);
    // The same 409 another organization's GET answers 404 for: it says the address has an account,
    // nothing more.
    expect((await asOwnerB('GET', `/users/${a.users[0]!.id}`)).status).toBe(404);
    for (const answer of [
      await asOwnerB('POST', '/users', { name: 'Probe', email: taken.toUpperCase(), password: 'a-long-password' }),
      await asMemberB('PUT', `/users/${memberB.id}`, { email: taken, current_password: memberB.password }),
    ]) {
      expect(answer.status).toBe(409);
      expect(answer.body.error).toMatchObject({
        code: 'CONFLICT',
        details: [{ field: 'email', message: expect.any(String) }],
      });
      expect(JSON.stringify(answer.body)).not.toContain(a.orgId);
      expect(JSON.stringify(answer.body)).not.toContain(a.users[0]!.id);
    }
    // A member cannot add users at all, and without the password cannot try their own email: 403
    // and 400 whether taken or not.
    for (const email of [taken, `free-${Date.now()}@example.com`]) {
      expect((await asMemberB('POST', '/users', { name: 'Probe', email, password: 'a-long-password' })).status).toBe(
        403,
      );
      expect((await asMemberB('PUT', `/users/${memberB.id}`, { email })).status).toBe(400);
    }
    // A free address is taken at once, by either path.
    expect(
      (
        await asOwnerB('POST', '/users', {
          name: 'Fine',
          email: `fine-${Date.now()}@example.com`,
          password: 'a-long-password',
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await asMemberB('PUT', `/users/${memberB.id}`, {
          email: `mine-${Date.now()}@example.com`,
          current_password: memberB.password,
        })
      ).status,
    ).toBe(200);
  });

  it("lets a platform admin see every organization's users", async () => {
    const admin = await orgWithUsers(gateway, ['owner'], { platformAdmin: true });
    const other = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, admin.users[0]!.key);
    expect((await api('GET', `/users/${other.users[0]!.id}`)).status).toBe(200);
    const all = await api('GET', '/users?limit=100&sort=-created_at');
    expect(all.body.pagination.total).toBeGreaterThan(2);
    expect(all.body.data.map((u: { id: string }) => u.id)).toContain(other.users[0]!.id);
  });

  it('serves the same API under /v1, with its own envelope, leaving the gateway routes alone', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const response = await fetch(`${gateway.baseURL}/users?limit=5`, {
      headers: { authorization: `Bearer ${users[0]!.key}` },
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { pagination: unknown }).pagination).toMatchObject({ page: 1, limit: 5 });
    const denied = await fetch(`${gateway.baseURL}/users`);
    expect(denied.status).toBe(401);
    expect(((await denied.json()) as ApiErrorEnvelope).error).toMatchObject({ code: 'UNAUTHORIZED', details: [] });
    // The gateway's own routes keep their lower-case codes.
    const models = await fetch(`${gateway.baseURL}/models`);
    expect(((await models.json()) as ApiErrorEnvelope).error.code).toBe('unauthorized');
  });

  it('ignores X-Forwarded-For from a client that is no trusted proxy', async () => {
    const remaining = async (forwardedFor: string) =>
      Number(
        (await fetch(`${gateway.url}/api/v1/users`, { headers: { 'x-forwarded-for': forwardedFor } })).headers.get(
          'x-ratelimit-remaining',
        ),
      );
    const first = await remaining('203.0.113.7');
    // A made-up address does not buy a fresh count: both are the socket's, 127.0.0.1.
    expect(await remaining('198.51.100.23')).toBe(first - 1);
  });
});
