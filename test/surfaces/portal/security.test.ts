import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

const stores = await oneStore();

describe.each(stores)("the portal's defences (%s)", (store) => {
  let gateway: TestGateway;
  let orgId: string;
  let cookie: string;
  const owner = { email: 'guard@example.com', password: 'guard-password-123' };

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10' });
    orgId = (await gateway.services.orgs.create('Guarded')).id;
    await gateway.services.users.create({
      orgId,
      name: 'Guard',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    const signedIn = await form('/portal/sign-in', { email: owner.email, password: owner.password });
    expect(signedIn.status).toBe(303);
    cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
  });
  afterAll(() => gateway?.close());

  /** A form post as a browser on the portal's own page sends it, unless `headers` say otherwise. */
  function form(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
    return fetch(`${gateway.url}${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: gateway.url, ...headers },
      body: new URLSearchParams(fields).toString(),
    });
  }
  const page = (path: string) => fetch(`${gateway.url}${path}`, { headers: { cookie }, redirect: 'manual' });
  const tokenOf = async (path: string) => /name="_csrf" value="([^"]+)"/.exec(await (await page(path)).text())![1]!;

  it('sends the security headers with every page and asset', async () => {
    for (const path of ['/portal/sign-in', '/portal/keys', '/portal/usage']) {
      const response = await page(path);
      expect(response.status, path).toBe(200);
      const csp = response.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('cache-control')).toBe('no-store');
      const html = await response.text();
      // No inline script: every <script> names a file under /portal/assets.
      for (const tag of html.match(/<script[^>]*>/g) ?? []) expect(tag).toMatch(/src="\/portal\/assets\//);
      expect(html).not.toMatch(/ on[a-z]+=/);
    }
  });

  it('refuses a change from another origin whatever its Content-Type, before reading it', async () => {
    const token = await tokenOf('/portal/keys');
    const fields = { _csrf: token, name: 'forged', expiry: 'never', requests_per_minute: '60', max_concurrency: '10' };
    for (const type of ['application/json', 'application/octet-stream']) {
      const refused = await form('/portal/keys', fields, {
        cookie,
        origin: 'https://evil.example',
        'content-type': type,
      });
      expect(refused.status, type).toBe(403);
      expect(await refused.text(), type).toContain('This form did not come from this portal.');
    }
    expect(await gateway.services.keys.list(orgId)).toEqual([]);
  });

  it("refuses a form from another origin, or without its session's token", async () => {
    const token = await tokenOf('/portal/keys');
    const fields = { _csrf: token, name: 'forged', expiry: 'never', requests_per_minute: '60', max_concurrency: '10' };
    expect((await form('/portal/keys', fields, { cookie, origin: 'https://evil.example' })).status).toBe(403);
    expect((await form('/portal/keys', fields, { cookie, origin: '', referer: '' })).status).toBe(403);
    expect((await form('/portal/keys', { ...fields, _csrf: 'x'.repeat(43) }, { cookie })).status).toBe(403);
    expect((await form('/portal/keys', { ...fields, _csrf: '' }, { cookie })).status).toBe(403);
    expect(await gateway.services.keys.list(orgId)).toEqual([]);
    const made = await form('/portal/keys', fields, { cookie });
    expect(made.status).toBe(201);
    expect((await gateway.services.keys.list(orgId)).map((k) => k.name)).toEqual(['forged']);
    // A token is bound to its session: another session's token does not pass.
    const other = await form('/portal/sign-in', { email: owner.email, password: owner.password });
    const otherCookie = other.headers.get('set-cookie')!.split(';')[0]!;
    expect((await form('/portal/keys', { ...fields, name: 'crossed' }, { cookie: otherCookie })).status).toBe(403);
  });

  it('refuses a post with neither Origin nor Sec-Fetch-Site, with its session and token; either header alone passes', async () => {
    const token = await tokenOf('/portal/keys');
    const fields = { _csrf: token, name: 'unsaid', expiry: 'never', requests_per_minute: '60', max_concurrency: '10' };
    // fetch sends no Origin and no Sec-Fetch-Site unless told: a program holding the cookie, not a
    // browser.
    const post = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${gateway.url}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(body).toString(),
      });
    const refused = await post('/portal/keys', fields, { cookie });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('This form did not come from this portal.');
    expect((await post('/portal/sign-in', { email: owner.email, password: owner.password })).status).toBe(403);
    const names = async () => (await gateway.services.keys.list(orgId)).map((key) => key.name);
    expect(await names()).not.toContain('unsaid');
    // Either header alone, as browsers send them, is enough. (The generic API, which takes keys, is
    // not a portal post: its tests post without either header, as programs do.)
    expect((await post('/portal/keys', fields, { cookie, 'sec-fetch-site': 'same-origin' })).status).toBe(201);
    expect(await names()).toContain('unsaid');
  });

  it('refuses a sign-in with a password longer than any can be, without cutting it to length', async () => {
    const longer = await form('/portal/sign-in', {
      email: owner.email,
      password: `${owner.password}${'x'.repeat(200)}`,
    });
    expect(longer.status).toBe(400);
    expect(longer.headers.get('set-cookie')).toBeNull();
    expect(await longer.text()).toContain('at most 128 characters');
  });

  it('shows a refused change to users on the page: the last owner stays an owner', async () => {
    const me = (await gateway.services.users.findByEmail(owner.email))!;
    const token = await tokenOf('/portal/users');
    const refused = await form(`/portal/users/${me.id}/role`, { _csrf: token, role: 'member' }, { cookie });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('last owner');
    expect((await gateway.services.users.get(me.id)).role).toBe('owner');
    const added = await form(
      '/portal/users',
      { _csrf: token, name: 'Second', email: 'second@example.com', password: 'second-password', role: 'admin' },
      { cookie },
    );
    expect(added.status).toBe(303);
    expect(added.headers.get('location')).toBe('/portal/users?done=user-added');
  });

  it('shows a script in a key name as text', async () => {
    await gateway.services.keys.create({ orgId, name: '<script>alert("pwned")</script><img src=x onerror=alert(1)>' });
    const html = await (await page('/portal/keys')).text();
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;');
  });

  it('starts every page with <!DOCTYPE html>, error pages included (standards mode in any browser)', async () => {
    const pages: Array<[string, number, Promise<Response>]> = [
      ['/portal/sign-in', 200, fetch(`${gateway.url}/portal/sign-in`)],
      ...[
        '/portal/keys',
        '/portal/usage',
        '/portal/users',
        '/portal/projects',
        '/portal/costs',
        '/portal/stacks',
        '/portal/clusters',
      ].map((path): [string, number, Promise<Response>] => [path, 200, page(path)]),
      ['/portal/keys/key_nope/edit', 404, page('/portal/keys/key_nope/edit')],
      ['/portal/costs?window=month&month=0001-01', 400, page('/portal/costs?window=month&month=0001-01')],
    ];
    for (const [path, status, answer] of pages) {
      const response = await answer;
      expect(response.status, path).toBe(status);
      expect(response.headers.get('content-type'), path).toMatch(/^text\/html/);
      expect((await response.text()).slice(0, 15), path).toBe('<!DOCTYPE html>');
    }
  });

  it('refuses a costs window before 1970 (never January 1901 for 0001-01): the page says so and shows this month, and so does its CSV', async () => {
    const thisMonth = new Date().toISOString().slice(0, 7);
    for (const query of [
      'window=month&month=0001-01',
      'window=month&month=1969-12',
      'window=custom&from=0001-01-01&to=0001-01-31',
      'window=custom&from=1969-12-31&to=1970-01-02',
    ]) {
      const response = await page(`/portal/costs?${query}`);
      expect(response.status, query).toBe(400);
      const html = await response.text();
      expect(html, query).toMatch(/role="alert"[^>]*>[^<]*1970[^<]*Showing this month\./);
      expect(html, query).toMatch(new RegExp(`name="month" type="month"[^>]* value="${thisMonth}"`));
      expect(html, query).not.toContain('1901');
      const csv = await page(`/portal/costs.csv?${query}`);
      expect(csv.headers.get('content-disposition'), query).toContain(`_${thisMonth.replace('-', '')}01T000000Z_`);
    }
    // The form's fields say where the reports start, so a browser refuses earlier ones before
    // sending.
    const form = await (await page('/portal/costs')).text();
    expect(form).toMatch(/<input id="month" name="month" type="month" min="1970-01"/);
    expect(form).toMatch(/<input id="from" name="from" type="date" min="1970-01-01"/);
    expect(form).toMatch(/<input id="to" name="to" type="date" min="1970-01-01"/);
    expect((await page('/portal/costs?window=month&month=1970-01')).status).toBe(200);
  });

  it('sends people without a session to sign in, and answers unknown pages with 404', async () => {
    const response = await fetch(`${gateway.url}/portal/keys`, { redirect: 'manual' });
    expect(response.status).toBe(303);
    expect(response.headers.get('location')).toBe('/portal/sign-in');
    expect(
      (
        await fetch(`${gateway.url}/`, { redirect: 'manual', headers: { accept: 'text/html,application/xhtml+xml' } })
      ).headers.get('location'),
    ).toBe('/portal');
    expect((await fetch(`${gateway.url}/`)).status).toBe(404);
    expect((await page('/portal/keys/key_nope/edit')).status).toBe(404);
    expect((await page('/portal/assets/portal.0000.css')).status).toBe(404);
  });
});
