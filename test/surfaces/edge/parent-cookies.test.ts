import http from 'node:http';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runs } from '../../../src/shared/db/schema.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { apiAs, orgWithUsers, signIn } from '../api/harness.js';
import { profileWithNodes } from '../../platform/runs/harness.js';
import { chromiumAvailable, chromiumPath, SHOTS } from '../portal/browser.js';

const ready = chromiumAvailable();

/**
 * Login CSRF through a stack's public URL: the portal at `portal.corp.test`,
 * another organization's cluster at `apps.corp.test` (beside it, so allowed),
 * its stack at `web.apps.corp.test` answering with the attacker's own session
 * id as a cookie for the parent domain `corp.test`. Were that passed on, the
 * browser would send it to the portal too, and the victim would be working
 * in the attacker's organization. Every name resolves to 127.0.0.1
 * (Chromium's `--host-resolver-rules`).
 */
describe.skipIf(!ready)("a stack's cookies for a parent domain, in Chromium", () => {
  let gateway: TestGateway;
  let node: http.Server;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let port: string;
  let profile: string;
  const nodeSaw: Array<string | undefined> = [];
  const victim = { name: 'Vera Victim', email: 'vera@corp.example', password: 'vera-password-123' };

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    port = new URL(gateway.url).port;
    profile = await profileWithNodes(gateway, 3);
    const { orgId, users } = await orgWithUsers(gateway, ['owner']);
    const attacker = apiAs(gateway, users[0]!.key);
    const cluster = await attacker('POST', '/clusters', {
      name: 'apps',
      profile,
      nodes: 1,
      public_domain: 'apps.corp.test',
    });
    expect(cluster.status).toBe(201);
    const attackerSession = (await signIn(gateway, users[0]!.email, users[0]!.password)).cookie!.split('=')[1]!;

    // The attacker's node: a cookie for the whole parent domain, on a longer path so the browser
    // sends it first.
    node = http.createServer((req, res) => {
      nodeSaw.push(req.headers['accept-encoding']);
      res.setHeader('set-cookie', [
        `tollgate_session=${attackerSession}; Domain=corp.test; Path=/portal; HttpOnly`,
        'theme=dark; domain=.CORP.test',
      ]);
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end('<!doctype html><title>web</title><p>a stack</p>');
    });
    await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
    // An applied run whose public URL is the stack's, as a worker leaves it.
    await gateway.services.db.insert(runs).values({
      id: `run_${Math.random().toString(36).slice(2, 10)}`,
      orgId,
      clusterId: cluster.body.id,
      stackName: 'web',
      packageSha256: '0'.repeat(64),
      inputs: {},
      state: 'APPLIED',
      finishedAt: new Date(),
      publicUrl: 'https://web.apps.corp.test',
      webTarget: `127.0.0.1:${(node.address() as { port: number }).port}`,
    });
    await gateway.services.publicHosts.refresh();

    const victimOrg = await gateway.services.orgs.create('Victim Org');
    await gateway.services.users.create({
      orgId: victimOrg.id,
      name: victim.name,
      email: victim.email,
      password: victim.password,
      role: 'owner',
    });
    await gateway.services.clusters.create({
      orgId: victimOrg.id,
      name: 'own',
      profile,
      nodeCount: 1,
      publicDomain: 'own.example.test',
      createdBy: null,
    });
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--no-sandbox', '--host-resolver-rules=MAP *.corp.test 127.0.0.1'],
    });
    context = await browser.newContext();
    page = await context.newPage();
    // A step that cannot happen fails with what it waited for, inside the test's own time.
    page.setDefaultTimeout(10_000);
    await mkdir(SHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => node?.close(resolve));
    await gateway?.close();
  });

  const portal = (route: string) => `http://portal.corp.test:${port}${route}`;
  const signedInName = async () => ((await page.locator('header .muted').first().textContent()) ?? '').trim();

  it("keeps the portal signed in as its own user after a visit to the stack; the cookie stays on the stack's host", async () => {
    await page.goto(portal('/portal/sign-in'));
    await page.getByLabel('Email').fill(victim.email);
    await page.getByLabel('Password').fill(victim.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/portal/overview');
    expect(await signedInName()).toBe(victim.name);
    await page.screenshot({ path: path.join(SHOTS, 'parent-cookie-before.png') });

    await page.goto(`http://web.apps.corp.test:${port}/`);
    expect(await page.locator('p').textContent()).toBe('a stack');
    await page.screenshot({ path: path.join(SHOTS, 'parent-cookie-stack.png') });

    await page.goto(portal('/portal/keys'));
    await page.screenshot({ path: path.join(SHOTS, 'parent-cookie-after.png') });
    expect(await signedInName()).toBe(victim.name);
    // Both of the stack's cookies are kept, for its own host only.
    const cookies = await context.cookies();
    expect(
      cookies
        .filter((cookie) => cookie.name !== 'tollgate_session' || cookie.path === '/portal')
        .map((cookie) => [cookie.name, cookie.domain])
        .sort(),
    ).toEqual([
      ['theme', 'web.apps.corp.test'],
      ['tollgate_session', 'web.apps.corp.test'],
    ]);
  });

  it("refuses, from the portal, a public domain above or below the stack's cluster: 409", async () => {
    await page.goto(portal('/portal/keys'));
    const create = (domain: string) =>
      page.evaluate(
        async (spec) => {
          const answer = await fetch('/api/v1/clusters', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'n', profile: spec.profile, nodes: 1, public_domain: spec.domain }),
          });
          return { status: answer.status, body: (await answer.json()) as { error: { message: string } } };
        },
        { profile, domain },
      );
    for (const domain of ['corp.test', 'x.apps.corp.test', 'apps.corp.test']) {
      const answer = await create(domain);
      expect(answer.status, domain).toBe(409);
      expect(answer.body.error.message).toBe(`The public domain ${domain} is taken; choose another.`);
    }
  });

  it('asks the node only for encodings it can decode (a browser offers zstd, which Node 20 cannot)', async () => {
    nodeSaw.length = 0;
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const request = http.get(
        {
          host: '127.0.0.1',
          port,
          path: '/',
          headers: { host: `web.apps.corp.test:${port}`, 'accept-encoding': 'gzip, deflate, br, zstd' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode));
        },
      );
      request.on('error', reject);
    });
    expect(status).toBe(200);
    expect(nodeSaw).toEqual(['gzip, deflate, br']);
  });
});
