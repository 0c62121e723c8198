import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();

/**
 * A key's priority band on its portal edit page (docs/fair-sharing.md): an owner chooses default,
 * background or batch; interactive is the operator's to give, so a form edited to send it is
 * refused (403) and nothing changes; a member sees the band without the choice, and a band slipped
 * into their form is refused too.
 */
describe.skipIf(!ready)("a key's band on the portal in Chromium", () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  let keyId: string;
  let memberKeyId: string;
  const owner = { email: 'band-owner@example.com', password: 'band-owner-password' };
  const member = { email: 'band-member@example.com', password: 'band-member-password' };
  const pages: Record<'owner' | 'member', Page> = {} as never;
  const bandOf = async (id: string) => (await gateway.services.keys.get(id)).band;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    const { services } = gateway;
    const org = await services.orgs.create('Band Org');
    const ownerRow = await services.users.create({ orgId: org.id, name: 'Bo Owner', role: 'owner', ...owner });
    const memberRow = await services.users.create({ orgId: org.id, name: 'Mia Member', role: 'member', ...member });
    keyId = (await services.keys.create({ orgId: org.id, userId: ownerRow.id, name: 'nightly import' })).key.id;
    memberKeyId = (await services.keys.create({ orgId: org.id, userId: memberRow.id, name: 'laptop' })).key.id;
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
    pages.owner = await signedInPage(browser, gateway.url, owner);
    pages.member = await signedInPage(browser, gateway.url, member);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  /** Submits the edit form as it stands and answers the POST's status. */
  const save = async (page: Page) => {
    const answer = page.waitForResponse((response) => response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Save' }).click();
    return (await answer).status();
  };

  it('lets an owner put a key in the batch band from its edit page', async () => {
    const page = pages.owner;
    await page.goto(`${gateway.url}/portal/keys`);
    await page.getByRole('link', { name: 'Edit nightly import' }).click();
    await page.waitForURL(`**/portal/keys/${keyId}/edit`);
    const band = page.getByLabel('Priority band');
    expect(await band.locator('option').allTextContents()).toEqual(['default', 'background', 'batch']);
    expect(await band.inputValue()).toBe('default');
    await band.selectOption('batch');
    await lookAt(page, 'key-band-owner', axeSource);
    expect(await save(page)).toBe(303);
    await page.waitForURL('**/portal/keys?done=saved');
    expect(await page.locator('tr', { hasText: 'nightly import' }).textContent()).toContain('batch band');
    expect(await bandOf(keyId)).toBe('batch');
    await lookAt(page, 'key-band-list', axeSource);
  });

  it('refuses an owner whose form was edited to send interactive, and keeps the band', async () => {
    const page = pages.owner;
    await page.goto(`${gateway.url}/portal/keys/${keyId}/edit`);
    await page.evaluate(() => {
      const doc = (globalThis as unknown as { document: any }).document;
      const select = doc.querySelector('#band');
      const option = doc.createElement('option');
      option.value = 'interactive';
      select.append(option);
      select.value = 'interactive';
    });
    expect(await save(page)).toBe(403);
    expect(await page.locator('main').textContent()).toMatch(/only the operator grants interactive/);
    expect(await bandOf(keyId)).toBe('batch');
  });

  it('offers interactive, selected, on a key the operator gave it; the owner keeps it while editing the rest', async () => {
    await gateway.services.keys.update(keyId, { band: 'interactive' });
    const page = pages.owner;
    await page.goto(`${gateway.url}/portal/keys/${keyId}/edit`);
    const band = page.getByLabel('Priority band');
    expect(await band.locator('option').allTextContents()).toEqual(['interactive', 'default', 'background', 'batch']);
    expect(await band.inputValue()).toBe('interactive');
    await page.getByLabel('Requests per minute').fill('90');
    expect(await save(page)).toBe(303);
    const key = await gateway.services.keys.get(keyId);
    expect([key.band, key.requestsPerMinute]).toEqual(['interactive', 90]);
  });

  it('shows a member the band without a choice, and refuses a band slipped into their form', async () => {
    const page = pages.member;
    await page.goto(`${gateway.url}/portal/keys/${memberKeyId}/edit`);
    expect(await page.locator('#band').count()).toBe(0);
    expect(await page.locator('form.panel').textContent()).toContain('Priority band: default');
    await lookAt(page, 'key-band-member', axeSource);
    await page.evaluate(() => {
      const doc = (globalThis as unknown as { document: any }).document;
      const input = doc.createElement('input');
      input.type = 'hidden';
      input.name = 'band';
      input.value = 'batch';
      doc.querySelector('form[action^="/portal/keys/"]').append(input);
    });
    expect(await save(page)).toBe(403);
    expect(await bandOf(memberKeyId)).toBe('default');
  });
});
