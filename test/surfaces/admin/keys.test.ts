import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdmin } from './harness.js';

describe('admin API: keys', () => {
  let h: Awaited<ReturnType<typeof startAdmin>>;
  beforeAll(async () => {
    h = await startAdmin();
  });
  afterAll(() => h.store.close());

  const newOrg = async () => (await h.call('POST', '/orgs', { name: 'Keys Inc' })).body.id as string;

  it('creates a key with defaults and shows the secret once', async () => {
    const orgId = await newOrg();
    const created = await h.call('POST', `/orgs/${orgId}/keys`, { name: 'ci' });
    expect(created.status).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    expect(created.body).toEqual({
      id: expect.stringMatching(/^key_/),
      object: 'api_key',
      org_id: orgId,
      user_id: null,
      project_id: null,
      name: 'ci',
      hint: expect.stringMatching(/^sk-gw-….{4}$/),
      status: 'active',
      created_at: expect.any(String),
      expires_at: null,
      revoked_at: null,
      requests_per_minute: 60,
      max_concurrency: 10,
      tokens_per_minute: null,
      monthly_tokens: null,
      store_request_data: false,
      response_cache: false,
      band: 'default',
      secret: expect.stringMatching(/^sk-gw-[A-Za-z0-9_-]{43}$/),
    });
    expect(created.body.hint.slice(-4)).toBe(created.body.secret.slice(-4));
    const { secret, ...viewOnly } = created.body;
    const shown = await h.call('GET', `/keys/${created.body.id}`);
    expect(shown.body).toEqual(viewOnly);
    expect(JSON.stringify(shown.body)).not.toContain(secret);
    expect(JSON.stringify(shown.body)).not.toMatch(/hash/);
    expect((await h.call('GET', `/orgs/${orgId}/keys`)).body).toEqual({ object: 'list', data: [viewOnly] });
    // The secret works on the request path.
    expect((await h.services.keys.authenticate(`Bearer ${secret}`)).id).toBe(created.body.id);
  });

  it('creates a key with every setting, in a project, with an expiry', async () => {
    const orgId = await newOrg();
    const projectId = (await h.call('POST', `/orgs/${orgId}/projects`, { name: 'p' })).body.id;
    const body = {
      name: 'full',
      expiry: '30d',
      project_id: projectId,
      requests_per_minute: 5,
      max_concurrency: 2,
      tokens_per_minute: 1000,
      monthly_tokens: 5_000_000,
      store_request_data: true,
      response_cache: true,
    };
    const created = await h.call('POST', `/orgs/${orgId}/keys`, body);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      project_id: projectId,
      requests_per_minute: 5,
      max_concurrency: 2,
      tokens_per_minute: 1000,
      monthly_tokens: 5_000_000,
      store_request_data: true,
      response_cache: true,
    });
    const days = (Date.parse(created.body.expires_at) - Date.parse(created.body.created_at)) / 86_400_000;
    expect(Math.round(days)).toBe(30);
  });

  it('updates limits and toggles, with null meaning unlimited', async () => {
    const orgId = await newOrg();
    const id = (
      await h.call('POST', `/orgs/${orgId}/keys`, { name: 'k', tokens_per_minute: 100, monthly_tokens: 1000 })
    ).body.id;
    const updated = await h.call('PATCH', `/keys/${id}`, {
      name: 'renamed',
      requests_per_minute: 120,
      tokens_per_minute: null,
      monthly_tokens: null,
      response_cache: true,
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      name: 'renamed',
      requests_per_minute: 120,
      max_concurrency: 10,
      tokens_per_minute: null,
      monthly_tokens: null,
      response_cache: true,
      store_request_data: false,
    });
    expect((await h.call('GET', `/keys/${id}`)).body).toEqual(updated.body);
  });

  it('revokes a key; the key stops working and revoking again keeps the first time', async () => {
    const orgId = await newOrg();
    const created = (await h.call('POST', `/orgs/${orgId}/keys`, { name: 'k' })).body;
    const revoked = await h.call('POST', `/keys/${created.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ status: 'revoked', revoked_at: expect.any(String) });
    expect((await h.call('POST', `/keys/${created.id}/revoke`)).body.revoked_at).toBe(revoked.body.revoked_at);
    await expect(h.services.keys.authenticate(`Bearer ${created.secret}`)).rejects.toMatchObject({
      code: 'unauthorized',
    });
  });

  it('allows five live keys, answers 409 key_limit_reached for the sixth, and frees a slot on revoke', async () => {
    const orgId = await newOrg();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await h.call('POST', `/orgs/${orgId}/keys`, { name: `k${i}` });
      expect(res.status).toBe(201);
      ids.push(res.body.id);
    }
    const sixth = await h.call('POST', `/orgs/${orgId}/keys`, { name: 'k5' });
    expect(sixth.status).toBe(409);
    expect(sixth.body.error.code).toBe('key_limit_reached');
    await h.call('POST', `/keys/${ids[0]}/revoke`);
    expect((await h.call('POST', `/orgs/${orgId}/keys`, { name: 'k5' })).status).toBe(201);
  });

  it('names TOLLGATE_KEYS_PER_ACCOUNT when it refuses, and keys made for no user are one account (the service account)', async () => {
    const orgId = await newOrg();
    for (let i = 0; i < 5; i++)
      expect((await h.call('POST', `/orgs/${orgId}/keys`, { name: `k${i}` })).status).toBe(201);
    const sixth = await h.call('POST', `/orgs/${orgId}/keys`, { name: 'k5' });
    expect(sixth.body.error.message).toBe(
      "The organization's service account (keys made for no user) already holds 5 live keys, the most one account may (TOLLGATE_KEYS_PER_ACCOUNT=5); revoke one first.",
    );
    const user = await h.call('POST', `/orgs/${orgId}/users`, {
      name: 'Ada',
      email: `ada-${orgId}@example.com`,
      password: 'a-long-password',
    });
    expect((await h.call('POST', `/orgs/${orgId}/keys`, { name: 'hers', user_id: user.body.id })).status).toBe(201);
  });

  it('refuses bad settings with field details', async () => {
    const orgId = await newOrg();
    const res = await h.call('POST', `/orgs/${orgId}/keys`, {
      name: 'k',
      expiry: '2d',
      requests_per_minute: 0,
      max_concurrency: 1.5,
      tokens_per_minute: -1,
      store_request_data: 'yes',
    });
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual(
      expect.arrayContaining([
        { field: 'expiry', message: 'Must be one of: never, 7d, 30d, 90d, 1y.' },
        { field: 'requests_per_minute', message: 'Must be at least 1.' },
        { field: 'max_concurrency', message: 'Must be a whole number.' },
        { field: 'tokens_per_minute', message: 'Must be at least 1.' },
        { field: 'store_request_data', message: 'Must be true or false.' },
      ]),
    );
    const tooBig = await h.call('POST', `/orgs/${orgId}/keys`, { name: 'k', requests_per_minute: 1_000_001 });
    expect(tooBig.body.error.details).toEqual([{ field: 'requests_per_minute', message: 'Must be at most 1000000.' }]);
    const expiryOnPatch = await h.call(
      'PATCH',
      `/keys/${(await h.call('POST', `/orgs/${orgId}/keys`, { name: 'k' })).body.id}`,
      { expiry: '7d' },
    );
    expect(expiryOnPatch.body.error.details).toEqual([{ field: 'expiry', message: 'Unknown field.' }]);
    expect((await h.call('GET', `/orgs/${orgId}/keys`)).body.data).toHaveLength(1);
  });

  it('answers 404 for unknown keys and 403 project_not_found for a foreign project', async () => {
    for (const [method, path, body] of [
      ['GET', '/keys/key_nope'],
      ['PATCH', '/keys/key_nope', { name: 'x' }],
      ['POST', '/keys/key_nope/revoke'],
    ] as const) {
      const res = await h.call(method, path, body);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    expect((await h.call('POST', '/orgs/org_nope/keys', { name: 'k' })).status).toBe(404);
    const [a, b] = [await newOrg(), await newOrg()];
    const foreign = (await h.call('POST', `/orgs/${b}/projects`, { name: 'theirs' })).body.id;
    const res = await h.call('POST', `/orgs/${a}/keys`, { name: 'k', project_id: foreign });
    expect(res.body.error.code).toBe('project_not_found');
  });
});

describe('admin API: keys per account (TOLLGATE_KEYS_PER_ACCOUNT=2)', () => {
  let h: Awaited<ReturnType<typeof startAdmin>>;
  beforeAll(async () => {
    h = await startAdmin({ TOLLGATE_KEYS_PER_ACCOUNT: '2', TOLLGATE_PASSWORD_COST: '10' });
  });
  afterAll(() => h.store.close());

  it("counts each user's keys, not the organization's: twenty people do not share five", async () => {
    const orgId = (await h.call('POST', '/orgs', { name: 'Twenty' })).body.id as string;
    const people = await Promise.all(
      ['a', 'b', 'c'].map(
        async (name) =>
          (
            await h.call('POST', `/orgs/${orgId}/users`, {
              name,
              email: `${name}-${orgId}@example.com`,
              password: 'a-long-password',
            })
          ).body.id as string,
      ),
    );
    for (const userId of people) {
      for (let i = 0; i < 2; i++)
        expect((await h.call('POST', `/orgs/${orgId}/keys`, { name: `k${i}`, user_id: userId })).status).toBe(201);
    }
    const third = await h.call('POST', `/orgs/${orgId}/keys`, { name: 'k2', user_id: people[0] });
    expect(third.status).toBe(409);
    expect(third.body.error).toMatchObject({
      code: 'key_limit_reached',
      message: `User ${people[0]} already holds 2 live keys, the most one account may (TOLLGATE_KEYS_PER_ACCOUNT=2); revoke one first.`,
    });
  });

  it('hostile: many creates at once for one user leave exactly the limit live', async () => {
    const orgId = (await h.call('POST', '/orgs', { name: 'Racers' })).body.id as string;
    const userId = (
      await h.call('POST', `/orgs/${orgId}/users`, {
        name: 'r',
        email: `r-${orgId}@example.com`,
        password: 'a-long-password',
      })
    ).body.id as string;
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => h.call('POST', `/orgs/${orgId}/keys`, { name: `k${i}`, user_id: userId })),
    );
    expect(answers.filter((a) => a.status === 201)).toHaveLength(2);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(6);
  });
});
