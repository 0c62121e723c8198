import type { ApiErrorEnvelope } from '../../../src/surfaces/api/errors.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { apiAs, orgWithUsers } from './harness.js';

const stores = await oneStore();

describe.each(stores)('generic API: projects (%s)', (store) => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
  });
  afterAll(() => gateway?.close());

  it("creates, reads, updates and deletes a project, with the spec's fields", async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    const created = await api('POST', '/projects', {
      name: 'Search',
      description: 'Ranking experiments',
      visibility: 'public',
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^proj_/),
      name: 'Search',
      description: 'Ranking experiments',
      visibility: 'public',
      org_id: expect.any(String),
      created_by: users[0]!.id,
      created_at: expect.any(String),
    });
    const id = created.body.id;
    expect((await api('GET', `/projects/${id}`)).body.name).toBe('Search');
    expect((await api('PUT', `/projects/${id}`, { description: 'Now with rerankers' })).body).toMatchObject({
      name: 'Search',
      description: 'Now with rerankers',
    });
    expect((await api('DELETE', `/projects/${id}`)).status).toBe(204);
    expect((await api('GET', `/projects/${id}`)).status).toBe(404);
    expect((await api('DELETE', `/projects/${id}`)).status).toBe(404);
  });

  it('pages and sorts, and an empty list says so', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    expect((await api('GET', '/projects')).body).toEqual({
      data: [],
      pagination: { page: 1, limit: 20, total: 0, pages: 0 },
    });
    for (const name of ['delta', 'alpha', 'charlie', 'bravo', 'echo'])
      expect((await api('POST', '/projects', { name })).status).toBe(201);
    const page = await api('GET', '/projects?limit=2&page=3&sort=name');
    expect(page.body.pagination).toEqual({ page: 3, limit: 2, total: 5, pages: 3 });
    expect(page.body.data.map((p: { name: string }) => p.name)).toEqual(['echo']);
    expect((await api('GET', '/projects?sort=-name&limit=5')).body.data.map((p: { name: string }) => p.name)).toEqual([
      'echo',
      'delta',
      'charlie',
      'bravo',
      'alpha',
    ]);
    expect((await api('GET', '/projects?sort=-created_at&limit=1')).body.data[0].name).toBe('echo');
    expect((await api('GET', '/projects?sort=email')).body.error.details).toEqual([
      { field: 'sort', message: expect.any(String) },
    ]);
  });

  it('names every invalid field of a project', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    const bad = await api('POST', '/projects', {
      name: '  ',
      description: 'x'.repeat(2001),
      visibility: 'secret',
      owner: 'me',
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([
      'description',
      'name',
      'owner',
      'visibility',
    ]);
  });

  it('shows private projects to their creator, owners and admins only; members change only their own', async () => {
    const { users } = await orgWithUsers(gateway, ['owner', 'admin', 'member', 'member']);
    const [owner, admin, member, other] = users.map((u) => apiAs(gateway, u.key)) as [
      ReturnType<typeof apiAs>,
      ReturnType<typeof apiAs>,
      ReturnType<typeof apiAs>,
      ReturnType<typeof apiAs>,
    ];
    const secret = (await member('POST', '/projects', { name: 'mine', visibility: 'private' })).body;
    const shared = (await owner('POST', '/projects', { name: 'shared' })).body;
    const names = async (api: ReturnType<typeof apiAs>) =>
      (await api('GET', '/projects')).body.data.map((p: { name: string }) => p.name).sort();
    expect(await names(member)).toEqual(['mine', 'shared']);
    expect(await names(other)).toEqual(['shared']);
    expect(await names(admin)).toEqual(['mine', 'shared']);
    expect((await other('GET', `/projects/${secret.id}`)).status).toBe(404);
    expect((await other('PUT', `/projects/${shared.id}`, { name: 'renamed' })).status).toBe(403);
    expect((await other('DELETE', `/projects/${shared.id}`)).status).toBe(403);
    expect((await admin('PUT', `/projects/${secret.id}`, { visibility: 'public' })).body.visibility).toBe('public');
    expect(await names(other)).toEqual(['mine', 'shared']);
  });

  it('keeps organizations apart', async () => {
    const a = await orgWithUsers(gateway, ['owner']);
    const b = await orgWithUsers(gateway, ['owner']);
    const project = (await apiAs(gateway, a.users[0]!.key)('POST', '/projects', { name: 'a-only' })).body;
    const asB = apiAs(gateway, b.users[0]!.key);
    expect((await asB('GET', '/projects')).body.data).toEqual([]);
    expect((await asB('GET', `/projects/${project.id}`)).status).toBe(404);
    expect((await asB('PUT', `/projects/${project.id}`, { name: 'x' })).status).toBe(404);
    expect((await asB('DELETE', `/projects/${project.id}`)).status).toBe(404);
  });

  it('is the project X-Project-ID names; a deleted one is named no more', async () => {
    const { users } = await orgWithUsers(gateway, ['owner']);
    const api = apiAs(gateway, users[0]!.key);
    const project = (await api('POST', '/projects', { name: 'billing' })).body;
    const chat = () =>
      fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${users[0]!.key}`,
          'content-type': 'application/json',
          'x-project-id': project.id,
        },
        body: JSON.stringify({ model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
      });
    await gateway.services.wallets.credit(project.org_id, 'topup', 1_000_000_000n);
    expect((await chat()).status).toBe(200);
    expect((await api('DELETE', `/projects/${project.id}`)).status).toBe(204);
    const refused = await chat();
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as ApiErrorEnvelope).error.code).toBe('project_not_found');
  });
});
