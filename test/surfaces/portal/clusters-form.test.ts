import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';
import { profileWithNodes } from '../../platform/runs/harness.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();

// Creating a cluster in the portal: the generic API's checks and service, its refusals shown on the
// form.
describe.skipIf(!ready)('creating a cluster in the portal', () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  let profile: string;
  let orgId: string;
  const owner = { email: 'cluster-owner@example.com', password: 'cluster-owner-password' };
  const member = { email: 'cluster-member@example.com', password: 'cluster-member-password' };

  const signIn = (who: { email: string; password: string }) => signedInPage(browser, gateway.url, who);

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    const org = await gateway.services.orgs.create('Cluster Org');
    orgId = org.id;
    await gateway.services.users.create({
      orgId: org.id,
      name: 'Cleo Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    await gateway.services.users.create({
      orgId: org.id,
      name: 'Milo Member',
      email: member.email,
      password: member.password,
      role: 'member',
    });
    profile = await profileWithNodes(gateway, 2);
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  const fill = async (page: Page, fields: { name: string; nodes: string; domain: string }) => {
    await page.getByLabel('Name').fill(fields.name);
    await page.getByLabel('Hardware profile').selectOption(profile);
    await page.getByLabel('Nodes').fill(fields.nodes);
    await page.getByLabel('Public domain').fill(fields.domain);
    await page.getByRole('button', { name: 'Create cluster' }).click();
  };

  it('lets an owner create one from free nodes of a profile, and shows why a form is refused', async () => {
    const page = await signIn(owner);
    await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Clusters' }).click();
    await page.waitForURL('**/portal/clusters');
    expect(await page.getByLabel('Hardware profile').locator('option').allTextContents()).toEqual([
      `${profile}: 2 free nodes, 2 × GPU each`,
    ]);
    await lookAt(page, 'clusters-create', axeSource);
    await fill(page, { name: 'too big', nodes: '3', domain: 'big.example.test' });
    expect(await page.getByRole('alert').textContent()).toContain('Only 2 free');
    // What was typed stays in the form.
    expect(await page.getByLabel('Public domain').inputValue()).toBe('big.example.test');
    await fill(page, { name: 'bad domain', nodes: '1', domain: 'http://evil/' });
    expect(await page.getByRole('alert').textContent()).toContain('public domain: Must be a domain name');
    await fill(page, { name: 'training', nodes: '2', domain: 'Train.Example.test' });
    await page.waitForURL(/\/portal\/clusters\/cls_/);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('training');
    const { rows } = await gateway.services.clusters.list(orgId, { offset: 0, limit: 10, includeDeleted: false });
    expect(rows.map((row) => [row.name, row.publicDomain])).toEqual([['training', 'train.example.test']]);
    await page.goto(`${gateway.url}/portal/clusters`);
    // Every node is taken now; a second claim of the domain is refused whoever asks.
    expect(await page.getByLabel('Hardware profile').locator('option').allTextContents()).toEqual([
      `${profile}: 0 free nodes, 2 × GPU each`,
    ]);
    await lookAt(page, 'clusters-after', axeSource);
  }, 30_000);

  it("draws the shipped stacks' icons as the portal's own SVG files, so no emoji font is needed", async () => {
    const page = await signIn(member);
    await page.goto(`${gateway.url}/portal/stacks`);
    const icons = page.locator('.card .stack-icon img');
    expect(await icons.count()).toBe(5);
    for (const icon of await icons.all()) {
      expect(await icon.getAttribute('src')).toMatch(
        /^\/portal\/assets\/stack-(wheel|chart|bolt|calendar|rocket)\.[0-9a-f]{12}\.svg$/,
      );
      await until('the icon to load', () =>
        icon.evaluate(
          (img) =>
            (img as unknown as { complete: boolean; naturalWidth: number }).complete &&
            (img as unknown as { naturalWidth: number }).naturalWidth > 0,
        ),
      );
    }
    const srcs = await icons.evaluateAll((imgs) => imgs.map((img) => img.getAttribute('src')));
    expect(new Set(srcs).size).toBe(5);
    const drawn = await page.request.get(`${gateway.url}${srcs[0]}`);
    expect(drawn.headers()['content-type']).toBe('image/svg+xml');
    expect((await page.request.get(`${gateway.url}/portal/assets/stack-rocket.000000000000.svg`)).status()).toBe(404);
  }, 30_000);

  it('gives a member no form, and refuses their post', async () => {
    const page = await signIn(member);
    await page.goto(`${gateway.url}/portal/clusters`);
    expect(await page.getByRole('button', { name: 'Create cluster' }).count()).toBe(0);
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const posted = await page.request.post(`${gateway.url}/portal/clusters`, {
      form: { _csrf: csrf, name: 'sneaky', profile, nodes: '1', public_domain: 'sneaky.example.test' },
      headers: { origin: gateway.url },
    });
    expect(posted.status()).toBe(403);
    const { rows } = await gateway.services.clusters.list(orgId, { offset: 0, limit: 10, includeDeleted: false });
    expect(rows.map((row) => row.name)).toEqual(['training']);
  }, 30_000);
});
