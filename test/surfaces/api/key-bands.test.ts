import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';
import { apiAs, orgWithUsers, type TestUser } from './harness.js';

const stores = await oneStore();

/**
 * A key's priority band set by its organization (`PATCH /api/v1/keys/{id}`, docs/fair-sharing.md):
 * owners and admins choose `default`, `background` or `batch`; `interactive`, served before every
 * other organization's requests, is the operator's to grant. A member is refused (403), another
 * organization's user finds no such key (404).
 */
describe.each(stores)("a key's band through the generic API (%s)", (store) => {
  let gateway: TestGateway;
  let orgId: string;
  let owner: TestUser;
  let admin: TestUser;
  let member: TestUser;
  let stranger: TestUser;
  let operator: TestUser;
  const keyOf = async (userId: string) =>
    (await gateway.services.keys.list(orgId)).find((key) => key.userId === userId)!;

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
    const home = await orgWithUsers(gateway, ['owner', 'admin', 'member']);
    orgId = home.orgId;
    [owner, admin, member] = home.users as [TestUser, TestUser, TestUser];
    stranger = (await orgWithUsers(gateway, ['owner'])).users[0]!;
    operator = (await orgWithUsers(gateway, ['owner'], { platformAdmin: true })).users[0]!;
  });
  afterAll(() => gateway?.close());

  it("lets an owner and an admin lower a key's band, which the request path then holds to", async () => {
    const memberKey = await keyOf(member.id);
    const api = apiAs(gateway, owner.key);
    expect((await api('GET', `/keys/${memberKey.id}`)).body).toMatchObject({ id: memberKey.id, band: 'default' });
    const set = await api('PATCH', `/keys/${memberKey.id}`, { band: 'batch' });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ id: memberKey.id, org_id: orgId, band: 'batch', status: 'active' });
    expect(JSON.stringify(set.body)).not.toContain(member.key);
    expect((await apiAs(gateway, admin.key)('PATCH', `/keys/${memberKey.id}`, { band: 'background' })).body.band).toBe(
      'background',
    );
    // The member sees their own key's band, and its requests may no longer ask for default.
    expect((await apiAs(gateway, member.key)('GET', `/keys/${memberKey.id}`)).body.band).toBe('background');
    await until('the request path holds the key to background', async () => {
      const response = await fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${member.key}`,
          'content-type': 'application/json',
          'x-tollgate-band': 'default',
        },
        body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
      });
      return response.status === 403;
    });
    expect((await api('PATCH', `/keys/${memberKey.id}`, { band: 'default' })).body.band).toBe('default');
  });

  it('refuses an owner who would give a key interactive, and keeps its band', async () => {
    const ownKey = await keyOf(owner.id);
    for (const actor of [owner, admin]) {
      const refused = await apiAs(gateway, actor.key)('PATCH', `/keys/${ownKey.id}`, { band: 'interactive' });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({
        code: 'FORBIDDEN',
        message: expect.stringMatching(/only the operator/),
      });
    }
    expect((await keyOf(owner.id)).band).toBe('default');
    const jumped = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${owner.key}`,
        'content-type': 'application/json',
        'x-tollgate-band': 'interactive',
      },
      body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
    });
    expect(jumped.status).toBe(403);
  });

  it('lets the operator grant interactive; the owner may keep it or lower it, and not give it back', async () => {
    const ownKey = await keyOf(owner.id);
    const granted = await apiAs(gateway, operator.key)('PATCH', `/keys/${ownKey.id}`, { band: 'interactive' });
    expect(granted.status).toBe(200);
    const api = apiAs(gateway, owner.key);
    expect((await api('PATCH', `/keys/${ownKey.id}`, { band: 'interactive' })).status).toBe(200);
    expect((await api('PATCH', `/keys/${ownKey.id}`, { band: 'default' })).body.band).toBe('default');
    expect((await api('PATCH', `/keys/${ownKey.id}`, { band: 'interactive' })).status).toBe(403);
    expect((await keyOf(owner.id)).band).toBe('default');
  });

  it("refuses a member (403) and another organization's owner (404), and a band that does not exist (400)", async () => {
    const memberKey = await keyOf(member.id);
    const ownerKey = await keyOf(owner.id);
    const asMember = apiAs(gateway, member.key);
    expect((await asMember('PATCH', `/keys/${memberKey.id}`, { band: 'batch' })).status).toBe(403);
    // A member does not see the other keys of the organization.
    expect((await asMember('GET', `/keys/${ownerKey.id}`)).status).toBe(404);
    expect((await asMember('PATCH', `/keys/${ownerKey.id}`, { band: 'batch' })).status).toBe(404);
    const asStranger = apiAs(gateway, stranger.key);
    for (const method of ['GET', 'PATCH'])
      expect(
        (await asStranger(method, `/keys/${memberKey.id}`, method === 'GET' ? undefined : { band: 'batch' })).status,
      ).toBe(404);
    expect((await asStranger('PATCH', '/keys/key_nope', { band: 'batch' })).status).toBe(404);
    const api = apiAs(gateway, owner.key);
    for (const bad of [{ band: 'urgent' }, {}, { band: 'batch', name: 'x' }, { band: 1 }])
      expect((await api('PATCH', `/keys/${memberKey.id}`, bad)).status, JSON.stringify(bad)).toBe(400);
    expect((await keyOf(member.id)).band).toBe('default');
    expect((await keyOf(owner.id)).band).toBe('default');
  });
});
