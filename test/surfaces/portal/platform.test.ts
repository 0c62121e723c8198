import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { zipOf } from '../../helpers/zip.js';
import { FAKE_MODULE, profileWithNodes, runScratch, sandboxAvailable } from '../../platform/runs/harness.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable() && (await sandboxAvailable());

/**
 * A wide image, to see it fitted whole into the square icon slot (served by the test, not the
 * network).
 */
const WIDE_ICON =
  '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="50"><rect width="200" height="50" fill="#1f5fbf"/><circle cx="25" cy="25" r="20" fill="#f0b429"/><circle cx="175" cy="25" r="20" fill="#f0b429"/></svg>';

describe.skipIf(!ready)("the portal's stacks, clusters and runs in Chromium", () => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  let browser: Browser;
  let page: Page;
  let axeSource: string;
  let clusterId: string;
  const owner = { email: 'stacks-owner@example.com', password: 'stacks-owner-password' };
  const look = (name: string) => lookAt(page, name, axeSource);

  beforeAll(async () => {
    scratch = await runScratch();
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10', ...scratch.env });
    const org = await gateway.services.orgs.create('Stacks Org');
    const user = await gateway.services.users.create({
      orgId: org.id,
      name: 'Sam Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    const profile = await profileWithNodes(gateway, 2);
    clusterId = (
      await gateway.services.clusters.create({
        orgId: org.id,
        name: 'research',
        profile,
        nodeCount: 2,
        publicDomain: 'research.example.test',
        createdBy: user.id,
      })
    ).cluster.id;
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    const context = await browser.newContext({ bypassCSP: true });
    await context.route('https://icons.example.test/**', (route) =>
      route.fulfill({ contentType: 'image/svg+xml', body: WIDE_ICON }),
    );
    page = await context.newPage();
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
    await page.goto(`${gateway.url}/portal/sign-in`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/portal/overview');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    await scratch?.remove();
  });

  it('the catalog as cards with search and a category filter; an upload; the icon fitted whole', async () => {
    await page.getByRole('link', { name: 'Stacks' }).click();
    await page.waitForURL('**/portal/stacks');
    const titles = () => page.locator('.card h2').allTextContents();
    expect(await titles()).toEqual([
      'Monitoring: Prometheus and Grafana',
      'Ray cluster',
      'Slurm workload manager',
      'k3s Kubernetes',
      'vLLM serving',
    ]);
    await look('stacks');
    await page.getByLabel('Search').fill('grafana');
    await page.getByRole('button', { name: 'Show' }).click();
    expect(await titles()).toEqual(['Monitoring: Prometheus and Grafana']);
    await page.getByLabel('Search').fill('');
    await page.getByLabel('Category').selectOption('ML Framework');
    await page.getByRole('button', { name: 'Show' }).click();
    expect(await titles()).toEqual(['Ray cluster', 'vLLM serving']);

    // An upload: a module whose manifest names an image as its icon.
    const zip = await zipOf({
      'manifest.json': JSON.stringify({
        name: 'fake-lab',
        title: 'Fake lab',
        description: 'A stand-in module for the portal test.',
        category: 'Custom',
        icon: 'https://icons.example.test/wide.svg',
        inputs: [
          { name: 'name', type: 'string', required: true, description: 'Anything' },
          { name: 'mode', type: 'string', default: 'ok' },
          { name: 'count', type: 'number', default: 2, description: 'Lines it prints' },
        ],
      }),
      'main.tf': FAKE_MODULE,
    });
    await page.goto(`${gateway.url}/portal/stacks`);
    await page
      .getByLabel('Package (.zip)')
      .setInputFiles({ name: 'fake-lab.zip', mimeType: 'application/zip', buffer: zip });
    await page.getByRole('button', { name: 'Add stack' }).click();
    await page.waitForURL('**/portal/stacks/fake-lab?done=added');
    expect(await page.getByRole('status').textContent()).toBe('Stack added to the catalog.');
    const icon = page.locator('.stack-head .stack-icon img');
    await icon.waitFor();
    expect(await icon.evaluate((img: { naturalWidth: number }) => img.naturalWidth)).toBe(200);
    const [slot, image] = [await page.locator('.stack-head .stack-icon').boundingBox(), await icon.boundingBox()];
    expect(image!.width).toBeLessThanOrEqual(slot!.width);
    expect(
      await icon.evaluate(
        (img) =>
          (globalThis as unknown as { getComputedStyle(e: unknown): { objectFit: string } }).getComputedStyle(img)
            .objectFit,
      ),
    ).toBe('contain');
    await look('stack');

    // A package that is not a zip: refused on the catalog page, with the rule.
    await page.goto(`${gateway.url}/portal/stacks`);
    await page
      .getByLabel('Package (.zip)')
      .setInputFiles({ name: 'notes.zip', mimeType: 'application/zip', buffer: Buffer.from('not a zip') });
    await page.getByRole('button', { name: 'Add stack' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('It is not a readable .zip');
    await look('stacks-upload-refused');
  });

  it('applies a stack from the form made of its inputs; the run page follows the log live and ends APPLIED', async () => {
    await page.goto(`${gateway.url}/portal/stacks/fake-lab`);
    await page.getByLabel('Target').selectOption({ label: 'research: the whole cluster (2 nodes)' });
    expect(await page.getByLabel('count').inputValue()).toBe('2');
    expect(await page.getByLabel('name (required)').getAttribute('required')).not.toBeNull();
    await page.getByLabel('name (required)').fill('from the portal');
    await page.getByLabel('mode').fill('slow');
    await page.getByLabel('count').fill('15');
    await page.getByRole('button', { name: 'Apply Fake lab' }).click();
    await page.waitForURL('**/portal/runs/run_*');
    // Live: lines arrive while the run is running (15 lines, 100 ms apart), before the page reloads
    // at its end.
    await page.locator('#run-log', { hasText: 'fake: step 3 of 15' }).waitFor();
    const midway = await page.locator('#run-log').textContent();
    expect(midway).not.toContain('fake: step 15 of 15');
    await page.locator('.run-state', { hasText: 'APPLIED' }).waitFor({ timeout: 20_000 });
    expect(await page.locator('#run-log').textContent()).toContain('fake: step 15 of 15');
    expect(await page.locator('#log-status').count()).toBe(0);
    await look('run');
  });

  it('a refused apply shows why and keeps what was typed; a running run is canceled from its page', async () => {
    await page.goto(`${gateway.url}/portal/stacks/fake-lab`);
    await page.getByLabel('name (required)').fill('hang');
    await page.getByLabel('mode').fill('hang');
    await page.getByRole('button', { name: 'Apply Fake lab' }).click();
    await page.waitForURL('**/portal/runs/run_*');
    const runUrl = page.url();
    await page.locator('#run-log', { hasText: 'never finishing' }).waitFor();

    await page.goto(`${gateway.url}/portal/stacks/fake-lab`);
    await page.getByLabel('name (required)').fill('second');
    await page.getByRole('button', { name: 'Apply Fake lab' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('is being applied to this cluster already');
    expect(await page.getByLabel('name (required)').inputValue()).toBe('second');
    await look('stack-apply-refused');

    await page.goto(runUrl);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.locator('.run-state', { hasText: 'CANCELED' }).waitFor({ timeout: 15_000 });
  });

  it('clusters with their nodes and runs', async () => {
    await page.getByRole('link', { name: 'Clusters' }).first().click();
    await page.waitForURL('**/portal/clusters');
    await look('clusters');
    await page.getByRole('link', { name: 'research' }).click();
    await page.waitForURL(`**/portal/clusters/${clusterId}`);
    const states = await page.locator('td .run-state').allTextContents();
    expect(states).toEqual(['CANCELED', 'APPLIED']);
    expect(await page.locator('tbody').first().locator('tr').count()).toBe(2);
    await look('cluster');
  });
});
