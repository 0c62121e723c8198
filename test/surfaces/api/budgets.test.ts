import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { apiAs, orgWithUsers, signIn, type TestUser } from './harness.js';

const stores = await availableStores();

/**
 * Budgets where people set them: a project's in the generic API (`/api/v1/projects/{id}/budget`), a
 * key's or a project's in the portal (`/portal/budgets/...`). Owners set them; members see them; a
 * user of another organization can neither read nor set them (404, as for anything of another
 * tenant's).
 */
describe.each(stores)('budgets in the API and the portal (%s)', (store) => {
  let gateway: TestGateway;
  let owner: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let projectId: string;
  let keyId: string;

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
    const home = await orgWithUsers(gateway, ['owner', 'member']);
    [owner, member] = home.users as [TestUser, TestUser];
    // The other organization's owner: every right in their own, none in this one.
    stranger = (await orgWithUsers(gateway, ['owner'])).users[0]!;
    projectId = (await apiAs(gateway, owner.key)('POST', '/projects', { name: 'search' })).body.id;
    keyId = (await gateway.services.keys.list(home.orgId))[0]!.id;
  });
  afterAll(() => gateway?.close());

  it("lets owners set a project's budget, members read it, and shows the month's and the day's spend", async () => {
    const api = apiAs(gateway, owner.key);
    const set = await api('PUT', `/projects/${projectId}/budget`, { monthly: '25.00', daily: '2.5' });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({
      object: 'budget',
      monthly: '25.00',
      daily: '2.50',
      month: { spent: '0.00', resets_at: expect.stringMatching(/-01T00:00:00.000Z$/) },
      day: { spent: '0.00' },
    });
    expect((await apiAs(gateway, member.key)('GET', `/projects/${projectId}/budget`)).body.monthly).toBe('25.00');
    expect((await apiAs(gateway, member.key)('PUT', `/projects/${projectId}/budget`, { monthly: '99' })).status).toBe(
      403,
    );
    // null removes one; a field left out stays.
    expect((await api('PUT', `/projects/${projectId}/budget`, { daily: null })).body).toMatchObject({
      monthly: '25.00',
      daily: null,
    });
    for (const bad of [{ monthly: 25 }, { monthly: '-1' }, { monthly: '1e3' }, {}, { weekly: '1' }])
      expect((await api('PUT', `/projects/${projectId}/budget`, bad)).status, JSON.stringify(bad)).toBe(400);
  });

  it("refuses another organization's user: their API calls and portal pages find no such project or key", async () => {
    const api = apiAs(gateway, stranger.key);
    expect((await api('GET', `/projects/${projectId}/budget`)).status).toBe(404);
    expect((await api('PUT', `/projects/${projectId}/budget`, { monthly: '1000' })).status).toBe(404);

    const { cookie } = await signIn(gateway, stranger.email, stranger.password);
    const page = (path: string) => fetch(`${gateway.url}${path}`, { headers: { cookie: cookie! }, redirect: 'manual' });
    // The stranger's own form token, sent to this organization's budget pages.
    const own = await page('/portal/keys');
    const token = /name="_csrf" value="([^"]+)"/.exec(await own.text())![1]!;
    for (const path of [`/portal/budgets/project/${projectId}`, `/portal/budgets/key/${keyId}`]) {
      expect((await page(path)).status, path).toBe(404);
      const posted = await fetch(`${gateway.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: cookie!, origin: gateway.url, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: token, monthly: '1000', daily: '' }).toString(),
      });
      expect(posted.status, path).toBe(404);
    }
    const budget = await gateway.services.budgets.get('project', projectId);
    expect(budget.budgets.monthly).toBe(25_000_000_000n);
    expect((await gateway.services.budgets.get('key', keyId)).budgets.monthly).toBeNull();
  });

  it('answers a store failure while finding the project as an error, not as a page saying there is no such project', async () => {
    const { cookie } = await signIn(gateway, owner.email, owner.password);
    const lookup = vi.spyOn(gateway.services.projects, 'get').mockRejectedValueOnce(new Error('connection terminated'));
    try {
      const failed = await fetch(`${gateway.url}/portal/budgets/project/${projectId}`, {
        headers: { cookie: cookie! },
      });
      expect(failed.status).toBe(500);
      const text = await failed.text();
      expect(text).not.toContain('There is no such project');
      expect(text).not.toContain('connection terminated');
    } finally {
      lookup.mockRestore();
    }
    expect(
      (await fetch(`${gateway.url}/portal/budgets/project/${projectId}`, { headers: { cookie: cookie! } })).status,
    ).toBe(200);
  });

  it("lets an owner set a key's budget in the portal, and a member only see it", async () => {
    const { cookie } = await signIn(gateway, owner.email, owner.password);
    const page = await fetch(`${gateway.url}/portal/budgets/key/${keyId}`, { headers: { cookie: cookie! } });
    expect(page.status).toBe(200);
    const token = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const saved = await fetch(`${gateway.url}/portal/budgets/key/${keyId}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: cookie!, origin: gateway.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: token, monthly: '5', daily: '' }).toString(),
    });
    expect(saved.status).toBe(303);
    expect((await gateway.services.budgets.get('key', keyId)).budgets).toEqual({
      monthly: 5_000_000_000n,
      daily: null,
    });
    const memberSession = await signIn(gateway, member.email, member.password);
    const memberKey = (await gateway.services.keys.list((await gateway.services.budgets.get('key', keyId)).orgId)).find(
      (k) => k.userId === member.id,
    )!;
    const seen = await fetch(`${gateway.url}/portal/budgets/key/${memberKey.id}`, {
      headers: { cookie: memberSession.cookie! },
    });
    expect(seen.status).toBe(200);
    expect(await seen.text()).toContain('owners set budgets.');
  });
});
