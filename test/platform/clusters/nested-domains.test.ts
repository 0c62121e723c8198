import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { apiAs, orgWithUsers } from '../../surfaces/api/harness.js';
import { profileWithNodes } from '../runs/harness.js';

const stores = await oneStore();

/**
 * A stack under one cluster's domain answers for `<stack>.<domain>`: were another tenant's domain
 * above or below it (or the gateway's own host), that stack could set cookies for the other's
 * hosts. So nesting is refused as an exact clash is, whoever holds the other name, and the name is
 * free again once its cluster is deleted.
 */
describe.each(stores)('public domains nested in one another (%s)', (store) => {
  let gateway: TestGateway;
  const tag = Math.random().toString(36).slice(2, 8);
  const portalHost = `portal.${tag}.example.test`;

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PUBLIC_URL: `https://${portalHost}` });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function tenantWithProfile(nodes: number) {
    const { users } = await orgWithUsers(gateway, ['owner']);
    return { owner: apiAs(gateway, users[0]!.key), profile: await profileWithNodes(gateway, nodes) };
  }

  it("refuses a domain above or below another live cluster's, said as an exact clash; frees it when that cluster goes", async () => {
    const victim = await tenantWithProfile(1);
    const taken = `apps.${tag}.example.test`;
    const held = await victim.owner('POST', '/clusters', {
      name: 'victim',
      profile: victim.profile,
      nodes: 1,
      public_domain: taken,
    });
    expect(held.status).toBe(201);

    const attacker = await tenantWithProfile(1);
    for (const domain of [taken, `web.${taken}`, `a.b.${taken}`, `${tag}.example.test`, `WEB.${taken.toUpperCase()}`]) {
      const claimed = await attacker.owner('POST', '/clusters', {
        name: 'nested',
        profile: attacker.profile,
        nodes: 1,
        public_domain: domain,
      });
      expect(claimed.status, domain).toBe(409);
      const asked = domain.toLowerCase();
      expect(claimed.body.error).toMatchObject({
        code: 'CONFLICT',
        message: `The public domain ${asked} is taken; choose another.`,
        details: [{ field: 'public_domain' }],
      });
      // Nothing of who holds it.
      expect(JSON.stringify(claimed.body)).not.toContain(held.body.id);
    }
    // A name that only ends with the same letters is beside it, not under it.
    const beside = await attacker.owner('POST', '/clusters', {
      name: 'beside',
      profile: attacker.profile,
      nodes: 1,
      public_domain: `xapps.${tag}.example.test`,
    });
    expect(beside.status).toBe(201);
    expect((await attacker.owner('DELETE', `/clusters/${beside.body.id}`)).status).toBe(204);

    expect((await victim.owner('DELETE', `/clusters/${held.body.id}`)).status).toBe(204);
    const freed = await attacker.owner('POST', '/clusters', {
      name: 'after',
      profile: attacker.profile,
      nodes: 1,
      public_domain: `web.${taken}`,
    });
    expect(freed.status).toBe(201);
  });

  it("refuses a domain under the gateway's own host, as one above it", async () => {
    const attacker = await tenantWithProfile(1);
    for (const domain of [`evil.${portalHost}`, portalHost, `${tag}.example.test`]) {
      const claimed = await attacker.owner('POST', '/clusters', {
        name: 'evil',
        profile: attacker.profile,
        nodes: 1,
        public_domain: domain,
      });
      expect(claimed.status, domain).toBe(409);
      expect(claimed.body.error).toMatchObject({
        code: 'CONFLICT',
        message: `The public domain ${domain} is taken; choose another.`,
        details: [{ field: 'public_domain' }],
      });
    }
  });
});
