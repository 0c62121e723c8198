import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAmount } from '../../../src/gateway/billing/money.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();

// The budget pages as people reach them: from a key's edit page and from the projects list; an
// owner sets, a member sees.
describe.skipIf(!ready)("the portal's budget pages in Chromium", () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  let keyId: string;
  let secret: string;
  const owner = { email: 'budget-owner@example.com', password: 'budget-owner-password' };
  const member = { email: 'budget-member@example.com', password: 'budget-member-password' };
  const pages: Record<'owner' | 'member', Page> = {} as never;

  const signIn = (who: { email: string; password: string }) => signedInPage(browser, gateway.url, who);

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    const { services } = gateway;
    const org = await services.orgs.create('Budget Org');
    await services.wallets.credit(org.id, 'topup', 5_000_000_000n, 'the first top-up');
    const ownerRow = await services.users.create({
      orgId: org.id,
      name: 'Bea Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    await services.users.create({
      orgId: org.id,
      name: 'Mo Member',
      email: member.email,
      password: member.password,
      role: 'member',
    });
    await services.projects.create({ orgId: org.id, name: 'search', createdBy: ownerRow.id });
    const made = await services.keys.create({ orgId: org.id, userId: ownerRow.id, name: 'nightly batch' });
    keyId = made.key.id;
    secret = made.secret;
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
    pages.owner = await signIn(owner);
    pages.member = await signIn(member);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  /** The budget table's row for a window ('this month' or 'today'), as its cells' text. */
  const row = async (page: Page, window: string) =>
    (await page.locator('tbody tr', { hasText: window }).locator('td').allTextContents()).map((cell) => cell.trim());

  it("reaches a key's budget from its edit page, and an owner sets it there", async () => {
    const page = pages.owner;
    await page.goto(`${gateway.url}/portal/keys/${keyId}/edit`);
    await page.getByRole('link', { name: 'Budget and spend' }).click();
    await page.waitForURL(`**/portal/budgets/key/${keyId}`);
    expect(await page.locator('h1').textContent()).toBe('Budget of “nightly batch”');
    expect((await row(page, 'this month')).slice(0, 3)).toEqual(['this month', 'none', '0.00']);

    await page.getByLabel('Monthly budget').fill('12.5');
    await page.getByRole('button', { name: 'Save budget' }).click();
    await page.waitForURL(`**/portal/budgets/key/${keyId}?done=saved`);
    expect(await page.getByRole('status').textContent()).toContain('Saved: the budget applies from the next request.');
    expect((await row(page, 'this month')).slice(0, 2)).toEqual(['this month', '12.50']);
    expect((await row(page, 'today')).slice(0, 2)).toEqual(['today', 'none']);
    expect((await gateway.services.budgets.get('key', keyId)).budgets).toEqual({
      monthly: 12_500_000_000n,
      daily: null,
    });
    await lookAt(page, 'budget-key', axeSource);
  });

  it('shows what the key spent, as the usage API counts it', async () => {
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    await client.chat.completions.create({
      model: 'sim-chat',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const summary = (await (
      await fetch(`${gateway.baseURL}/usage/summary`, { headers: { authorization: `Bearer ${secret}` } })
    ).json()) as { totals: { cost_nanos: string } };
    expect(BigInt(summary.totals.cost_nanos)).toBeGreaterThan(0n);
    const page = pages.owner;
    await page.goto(`${gateway.url}/portal/budgets/key/${keyId}`);
    const spent = formatAmount(BigInt(summary.totals.cost_nanos));
    expect(await row(page, 'this month')).toEqual(['this month', '12.50', spent, expect.any(String)]);
    expect((await row(page, 'today'))[2]).toBe(spent);
  });

  it('keeps a wrong amount in the form with what is wrong, and changes nothing', async () => {
    const page = pages.owner;
    await page.goto(`${gateway.url}/portal/budgets/key/${keyId}`);
    await page.getByLabel('Daily budget').fill('-3');
    const answer = page.waitForResponse((response) => response.request().method() === 'POST');
    await page.getByRole('button', { name: 'Save budget' }).click();
    expect((await answer).status()).toBe(400);
    expect(await page.getByRole('alert').textContent()).toMatch(/daily/i);
    expect((await gateway.services.budgets.get('key', keyId)).budgets.daily).toBeNull();
    await lookAt(page, 'budget-error', axeSource);
  });

  it("lets a member reach a project's budget from the projects list and see it, without the form", async () => {
    const page = pages.member;
    await page.goto(`${gateway.url}/portal/projects`);
    await page.getByRole('link', { name: 'budget' }).click();
    await page.waitForURL('**/portal/budgets/project/**');
    expect(await page.locator('h1').textContent()).toBe('Budget of “search”');
    expect(await page.locator('form[action^="/portal/budgets/"]').count()).toBe(0);
    expect(await page.getByText("Only the organization's owners set budgets.").count()).toBe(1);
    await lookAt(page, 'budget-project-member', axeSource);
  });
});
