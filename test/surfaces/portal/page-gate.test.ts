import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PageGate } from '../../../src/shared/http/page-gate.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

describe('PageGate', () => {
  it("runs an organization's pages in turn, refuses past its waiting bound, and never holds another's", async () => {
    const gate = new PageGate({ perOrg: 1, waitingPerOrg: 1 });
    const leaveFirst = await gate.enter('big');
    let secondIn = false;
    const second = gate.enter('big').then((leave) => {
      secondIn = true;
      return leave;
    });
    await expect(gate.enter('big')).rejects.toThrow(/TOLLGATE_PORTAL_ORG_PAGES_WAITING is 1/);
    // Another organization goes at once.
    (await gate.enter('small'))();
    await Promise.resolve();
    expect(secondIn).toBe(false);
    leaveFirst();
    leaveFirst(); // twice does nothing
    const leaveSecond = await second;
    expect(secondIn).toBe(true);
    leaveSecond();
    expect(gate.size).toBe(0);
  });
});

describe("the portal's pages take turns per organization", () => {
  let gateway: TestGateway;
  const cookies: Record<string, string> = {};
  const orgIds: Record<string, string> = {};

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_PORTAL_ORG_PAGES: '1',
      TOLLGATE_PORTAL_ORG_PAGES_WAITING: '0',
    });
    for (const name of ['big', 'neighbour']) {
      const orgId = (orgIds[name] = (await gateway.services.orgs.create(name)).id);
      const email = `${name}@example.com`;
      await gateway.services.users.create({ orgId, name, email, password: 'pages-password-123', role: 'owner' });
      const signedIn = await fetch(`${gateway.url}/portal/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: gateway.url },
        body: new URLSearchParams({ email, password: 'pages-password-123' }).toString(),
      });
      cookies[name] = signedIn.headers.get('set-cookie')!.split(';')[0]!;
    }
  });
  afterAll(() => gateway?.close());

  const page = (who: string, path: string) =>
    fetch(`${gateway.url}${path}`, { headers: { cookie: cookies[who]! }, redirect: 'manual' });

  it("refuses an organization's page past its turns with 429 naming the setting, while another's is served", async () => {
    // One of the big organization's pages is being drawn (its one turn taken).
    const leave = await gateway.services.portalPages.enter(orgIds.big!);
    const refused = await page('big', '/portal/usage');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.text()).toContain('TOLLGATE_PORTAL_ORG_PAGES_WAITING');
    expect((await page('neighbour', '/portal/usage')).status).toBe(200);
    // Its turn over, the organization's next page is served, and its turn given back.
    leave();
    expect((await page('big', '/portal/usage')).status).toBe(200);
    expect(gateway.services.portalPages.size).toBe(0);
  });
});
