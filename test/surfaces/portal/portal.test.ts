import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { chromiumAvailable, chromiumPath, consoleErrors, lookAt, SHOTS } from './browser.js';

const require = createRequire(import.meta.url);

const ready = chromiumAvailable();

describe.skipIf(!ready)('the portal in Chromium', () => {
  let gateway: TestGateway;
  let browser: Browser;
  let page: Page;
  let axeSource: string;
  /** What the pages logged as errors (a missing favicon is a 404 on every first page). */
  let errors: string[];
  const owner = { email: 'portal-owner@example.com', password: 'portal-owner-password' };
  /** Every page the flow passed through, for the screenshots and the accessibility check. */
  const visited: string[] = [];

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    const org = await gateway.services.orgs.create('Portal Org');
    await gateway.services.wallets.credit(org.id, 'topup', 5_000_000_000n);
    await gateway.services.users.create({
      orgId: org.id,
      name: 'Pat Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    // bypassCSP only so the test can inject axe-core; the pages' own CSP is checked below.
    page = await (await browser.newContext({ bypassCSP: true })).newPage();
    errors = consoleErrors(page);
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  /** The text of the first element `locator` finds, once it is there. */
  async function textOf(locator: ReturnType<Page['locator']>): Promise<string> {
    await locator.first().waitFor();
    return ((await locator.first().textContent()) ?? '').trim();
  }

  /**
   * Screenshots of the current page at each width, and an axe-core check (`browser.ts`); the page
   * joins the list checked at the end.
   */
  async function look(name: string): Promise<void> {
    visited.push(name);
    await lookAt(page, name, axeSource);
  }

  it('signs in, creates a key, uses it, sees it in usage, limits it, and deletes it', async () => {
    await page.goto(`${gateway.url}/`);
    expect(new URL(page.url()).pathname).toBe('/portal/sign-in');
    await look('sign-in');
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await textOf(page.getByRole('alert'))).toBe('The email or the password is wrong.');
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/portal/overview');
    await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'API keys' }).first().click();
    await page.waitForURL('**/portal/keys');
    await look('keys-empty');
    // The limit is the signed-in person's own (TOLLGATE_KEYS_PER_ACCOUNT), whatever others in the
    // organization hold.
    expect(await textOf(page.locator('caption'))).toContain('Your own live keys: 0 of 5.');

    // Create a key; its secret is shown once.
    await page.getByLabel('Name').fill('from the portal');
    await page.getByLabel('Expires').selectOption('30d');
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await textOf(page.getByRole('heading', { level: 1 }))).toContain('created');
    const secret = (await page.locator('#secret').textContent())!.trim();
    expect(secret).toMatch(/^sk-gw-/);
    await look('key-created');

    // The secret works with the official SDK.
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    const first = await client.chat.completions
      .create({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] })
      .withResponse();
    const requestId = first.response.headers.get('x-request-id')!;
    expect(first.data.choices[0]!.message.content).toBeTruthy();

    // The request is on the usage page.
    await page.goto(`${gateway.url}/portal/usage`);
    await page.getByText(requestId).waitFor();
    expect(await page.getByRole('img', { name: /^Cost by day \(USD\): 1 day with some/ }).count()).toBe(1);
    expect(await textOf(page.getByRole('table').nth(0))).toContain('from the portal');
    await look('usage');
    // The same window as CSV: a header and the request.
    const csv = await page.request.get(`${gateway.url}/portal/usage.csv?window=this-month`);
    expect(csv.status()).toBe(200);
    expect(csv.headers()['content-disposition']).toMatch(
      /^attachment; filename="tollgate-usage-\d{4}-\d{2}-01-to-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe(
      'time_utc,request_id,key_id,key_name,project_id,model,endpoint,status,prompt_tokens,completion_tokens,cost,currency,cache_hit,cached_tokens,reasoning_tokens,batch_id',
    );
    expect(lines.filter((line) => line.includes(requestId))).toHaveLength(1);
    // A window that ends before it starts is refused, with the reason, and this month is shown.
    await page.goto(`${gateway.url}/portal/usage?window=custom&from=2026-05-10&to=2026-05-01`);
    expect(await textOf(page.getByRole('alert'))).toContain('must end on or after');

    // Limit it to 1 request a minute: the next call is refused.
    await page.goto(`${gateway.url}/portal/keys`);
    await page.getByRole('cell', { name: 'from the portal', exact: true }).first().waitFor();
    // Created today, and last used today (the call above); it expires in 30 days.
    const today = new Date().toISOString().slice(0, 10);
    expect((await textOf(page.getByRole('row', { name: /from the portal/ }))).split(today).length - 1).toBe(2);
    await look('keys');
    await page.getByRole('link', { name: 'Edit from the portal' }).click();
    await look('key-edit');
    await page.getByLabel('Requests per minute').fill('1');
    await page.getByRole('button', { name: 'Save' }).click();
    expect(await textOf(page.getByRole('status'))).toContain('Saved');
    const limited = await client.chat.completions
      .create({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'again' }] })
      .catch((error: unknown) => error);
    expect((limited as { status?: number }).status).toBe(429);

    // Delete it: the next call is 401.
    await page.getByRole('link', { name: 'Delete from the portal' }).click();
    await look('key-delete');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete key' }).click();
    expect(await textOf(page.getByRole('status'))).toContain('Deleted');
    const refused = await client.chat.completions
      .create({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content: 'gone' }] })
      .catch((error: unknown) => error);
    expect((refused as { status?: number }).status).toBe(401);

    // Signing out ends the session: the portal asks to sign in again.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/portal/sign-in');
    await page.goto(`${gateway.url}/portal/keys`);
    expect(new URL(page.url()).pathname).toBe('/portal/sign-in');
  }, 60_000);

  it('shows the wallet, models with ready requests, projects and users; a script in a description is text', async () => {
    await page.goto(`${gateway.url}/portal/sign-in`);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(owner.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/portal/overview');

    await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Wallet' }).click();
    await page.waitForURL('**/portal/wallet');
    expect(await textOf(page.locator('.figure'))).toMatch(/^\d+\.\d{2,} USD$/);
    await page.getByRole('cell', { name: 'Top-up' }).first().waitFor();
    await look('wallet');

    await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Models' }).click();
    await page.waitForURL('**/portal/models');
    await page.getByRole('link', { name: 'Examples for sim-chat' }).click();
    expect(await textOf(page.locator('#curl'))).toContain('"model":"sim-chat"');
    expect(await textOf(page.locator('#sdk'))).toContain("model: 'sim-chat'");
    await look('models');

    await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Projects' }).click();
    await page.waitForURL('**/portal/projects');
    const injected = '<script>document.title="pwned"</script><b>bold</b>';
    await page.getByLabel('Name').fill('Search');
    await page.getByLabel('Description').fill(injected);
    await page.getByRole('button', { name: 'Add project' }).click();
    expect(await textOf(page.getByRole('status'))).toContain('Project added');
    expect(await textOf(page.getByRole('cell', { name: injected }))).toBe(injected);
    expect(await page.title()).not.toBe('pwned');
    expect(await page.locator('td b').count()).toBe(0);
    await look('projects');

    await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Users' }).click();
    await page.waitForURL('**/portal/users');
    await page.getByLabel('Name').fill('Mia Member');
    await page.getByLabel('Email').fill('mia@example.com');
    await page.getByLabel(/^Password/).fill('mia-password-123');
    await page.getByRole('button', { name: 'Add user' }).click();
    expect(await textOf(page.getByRole('status'))).toContain('User added');
    await page.getByRole('cell', { name: 'mia@example.com' }).waitFor();
    await look('users');
    // The last owner cannot be made a member by anyone: here, the owner's own row has no role form.
    expect(await page.getByRole('combobox', { name: 'Role of Pat Owner' }).count()).toBe(0);
  }, 60_000);

  it('works without JavaScript for its main action: signing in and creating a key', async () => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const noScript = await context.newPage();
    await noScript.goto(`${gateway.url}/portal/sign-in`);
    await noScript.getByLabel('Email').fill(owner.email);
    await noScript.getByLabel('Password').fill(owner.password);
    await noScript.getByRole('button', { name: 'Sign in' }).click();
    await noScript.waitForURL('**/portal/overview');
    await noScript.goto(`${gateway.url}/portal/keys`);
    await noScript.getByLabel('Name').fill('no script');
    await noScript.getByRole('button', { name: 'Create key' }).click();
    expect((await noScript.locator('#secret').textContent())!.trim()).toMatch(/^sk-gw-/);
    await context.close();
  }, 30_000);

  it('logged no 404 on any page (the icon is served), and renders error pages in standards mode too', async () => {
    expect(errors.filter((line) => line.includes('status of 404'))).toEqual([]);
    const icon = await page.request.get(`${gateway.url}${await page.locator('link[rel=icon]').getAttribute('href')}`);
    expect(icon.status()).toBe(200);
    expect(icon.headers()['content-type']).toBe('image/svg+xml');
    // A browser that asks the root for it anyway (a JSON answer opened in a tab) gets it too.
    expect((await page.request.get(`${gateway.url}/favicon.ico`)).status()).toBe(200);
    const missing = await page.goto(`${gateway.url}/portal/stacks/no-such-stack`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Not found');
    expect(missing?.status()).toBe(404);
    expect(
      await page.evaluate(() => (globalThis as unknown as { document: { compatMode: string } }).document.compatMode),
    ).toBe('CSS1Compat');
    await page.screenshot({ path: `${SHOTS}/not-found-1280.png`, fullPage: true });
  });
});
