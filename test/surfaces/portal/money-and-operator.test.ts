import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAmount } from '../../../src/gateway/billing/money.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { profileWithNodes } from '../../platform/runs/harness.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage, textOf } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();

// The overview, the wallet's whole ledger, and the operator's organizations, as an owner, a member
// and a platform admin see them.
describe.skipIf(!ready)("the portal's money pages and operator pages in Chromium", () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  let orgId: string;
  let secret: string;
  let profile: string;
  const owner = { email: 'money-owner@example.com', password: 'money-owner-password' };
  const member = { email: 'money-member@example.com', password: 'money-member-password' };
  const operator = { email: 'money-operator@example.com', password: 'money-operator-password' };
  const pages: Record<'owner' | 'member' | 'operator', Page> = {} as never;
  /** More ledger entries than one page holds (50), the oldest first. */
  const EXTRA_TOPUPS = 55;

  const signIn = (who: { email: string; password: string }) => signedInPage(browser, gateway.url, who);

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    const { services } = gateway;
    const org = await services.orgs.create('Money Org');
    orgId = org.id;
    await services.wallets.credit(org.id, 'topup', 5_000_000_000n, 'the first top-up');
    for (let i = 1; i <= EXTRA_TOPUPS; i++)
      await services.wallets.credit(org.id, 'topup', 1_000_000n, `small top-up ${i}`);
    const ownerRow = await services.users.create({
      orgId: org.id,
      name: 'Olive Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    await services.users.create({
      orgId: org.id,
      name: 'Max Member',
      email: member.email,
      password: member.password,
      role: 'member',
    });
    const ops = await services.orgs.create('Operators');
    await services.users.create({
      orgId: ops.id,
      name: 'Opal Operator',
      email: operator.email,
      password: operator.password,
      role: 'owner',
      platformAdmin: true,
    });
    ({ secret } = await services.keys.create({
      orgId: org.id,
      userId: ownerRow.id,
      name: 'nightly batch',
      expiry: '30d',
      monthlyTokens: 100_000,
    }));
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    for (const content of ['one', 'two', 'three'])
      await client.chat.completions.create({ model: 'sim-chat', max_tokens: 4, messages: [{ role: 'user', content }] });
    await gateway.charged();
    profile = await profileWithNodes(gateway, 1);
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
    pages.owner = await signIn(owner);
    pages.member = await signIn(member);
    pages.operator = await signIn(operator);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  const text = textOf;

  it("lands on the overview, whose figures are the usage API's, with a chart per key or model", async () => {
    const page = pages.owner;
    const summary = (await (
      await fetch(`${gateway.baseURL}/usage/summary`, { headers: { authorization: `Bearer ${secret}` } })
    ).json()) as { totals: { requests: number; cost_nanos: string } };
    expect(summary.totals.requests).toBe(3);
    expect(await text(page, '#figure-this-month')).toBe(`${formatAmount(BigInt(summary.totals.cost_nanos))} USD`);
    expect(await text(page, '#figure-this-month ~ p')).toBe('3 requests');
    expect(await text(page, '#figure-balance')).toBe(
      `${formatAmount(await gateway.services.wallets.balance(orgId))} USD`,
    );
    expect(await text(page, '#figure-last-hour')).toBe('3 requests');
    expect(await page.getByText('of 100,000 tokens this month').count()).toBe(1);
    expect(await page.getByRole('img', { name: /^Spend by day \(USD\): 1 day with some/ }).count()).toBe(1);
    await lookAt(page, 'overview', axeSource);
    await page.getByLabel('Keys and models').selectOption({ label: 'sim-chat' });
    await page.getByRole('button', { name: 'Show' }).click();
    expect(await text(page, '.chart figcaption')).toContain('the requests to sim-chat');
    await page.getByLabel('Keys and models').selectOption({ label: 'nightly batch' });
    await page.getByRole('button', { name: 'Show' }).click();
    expect(await text(page, '.chart figcaption')).toContain('the key “nightly batch”');
    expect(await page.getByRole('img', { name: /^Tokens by day: 1 day with some/ }).count()).toBe(1);
  }, 30_000);

  it('pages the ledger back to its oldest entry, and filters it by key and kind', async () => {
    const page = pages.owner;
    await page.getByRole('link', { name: 'Wallet', exact: true }).first().click();
    await page.waitForURL('**/portal/wallet');
    await lookAt(page, 'wallet', axeSource);
    const ledger = page.getByRole('region', { name: /^Ledger, newest first/ });
    let pagesSeen = 1;
    while (await page.getByRole('link', { name: 'Older entries' }).count()) {
      await page.getByRole('link', { name: 'Older entries' }).click();
      await page.getByRole('link', { name: 'Newest entries' }).waitFor();
      pagesSeen++;
    }
    // 56 top-ups and 3 charges at 50 a page: two pages, the last ending at the first top-up.
    expect(pagesSeen).toBe(2);
    expect(await ledger.locator('tbody tr').last().textContent()).toContain('the first top-up');
    expect(await page.getByText('This is the oldest entry.').count()).toBe(1);
    await lookAt(page, 'wallet-oldest', axeSource);
    await page.getByLabel('Key').selectOption({ label: 'nightly batch' });
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/key=/);
    expect(await ledger.locator('tbody tr').count()).toBe(3);
    expect(await ledger.locator('tbody tr td:nth-child(2)').allTextContents()).toEqual(['Charge', 'Charge', 'Charge']);
    await page.goto(`${gateway.url}/portal/wallet?kind=topup&day=${new Date().toISOString().slice(0, 10)}`);
    expect(await ledger.locator('tbody tr').count()).toBe(50);
    // A malformed filter is dropped with the reason, never sent to the database.
    await page.goto(`${gateway.url}/portal/wallet?day=2026-02-30&kind=gift`);
    expect(await text(page, '[role=alert]')).toContain('Give the day as YYYY-MM-DD.');
  }, 30_000);

  it("lets a platform admin top up an organization with a note, which that organization's wallet shows", async () => {
    const page = pages.operator;
    await page.getByRole('link', { name: 'Operator' }).click();
    await page.waitForURL('**/portal/operator/orgs');
    await lookAt(page, 'operator-orgs', axeSource);
    await page.getByRole('link', { name: 'Money Org' }).click();
    await page.getByLabel('Amount (USD)').fill('12.50');
    await page.getByLabel('Note (optional)').fill('invoice 2026-117');
    await page.getByRole('button', { name: 'Top up' }).click();
    expect(await text(page, '[role=status]')).toContain('Topped up');
    await lookAt(page, 'operator-org', axeSource);
    await pages.owner.goto(`${gateway.url}/portal/wallet`);
    expect(await pages.owner.getByRole('cell', { name: 'invoice 2026-117' }).count()).toBe(2);
    expect(await text(pages.owner, '#wallet-balance')).toBe(
      `${formatAmount(await gateway.services.wallets.balance(orgId))} USD`,
    );
  }, 30_000);

  it('lets a platform admin set prices, disable and enable a model, and see its engine and replicas', async () => {
    const page = pages.operator;
    await page.getByRole('navigation', { name: 'Operator' }).getByRole('link', { name: 'Models and prices' }).click();
    await page.waitForURL('**/portal/operator/models');
    await lookAt(page, 'operator-models', axeSource);
    await page.getByRole('link', { name: 'sim-chat', exact: true }).click();
    await page.getByLabel('Input, USD per 1M tokens', { exact: true }).fill('0.5');
    await page.getByLabel('Cached input (from the prefix cache), USD per 1M tokens').fill('0.05');
    await page.getByLabel('Output, USD per 1M tokens', { exact: true }).fill('1.25');
    await page.getByLabel('Batch input, USD per 1M tokens').fill('0.25');
    await page.getByLabel('Batch output, USD per 1M tokens').fill('0.625');
    await page.getByRole('button', { name: 'Save prices' }).click();
    expect(await text(page, '[role=status]')).toContain('Price saved');
    await lookAt(page, 'operator-model-prices', axeSource);
    const price = (await gateway.services.catalog.listPrices()).find((p) => p.modelId === 'sim-chat')!;
    expect([price.inputPerToken, price.cachedInputPerToken, price.outputPerToken]).toEqual([500n, 50n, 1250n]);
    expect([price.batchInputPerToken, price.batchOutputPerToken]).toEqual([250n, 625n]);
    // A price the API refuses (not a whole number of nanos per token) is refused here too, with the
    // API's reason.
    await page.getByLabel('Input, USD per 1M tokens', { exact: true }).fill('0.0001');
    await page.getByRole('button', { name: 'Save prices' }).click();
    expect(await text(page, '[role=alert]')).toContain('more than 3 decimal places');
    await page.goto(`${gateway.url}/portal/operator/models?model=sim-chat`);
    await page.getByRole('button', { name: 'Disable' }).click();
    expect(await text(page, '[role=status]')).toContain('Disabled');
    expect((await gateway.services.catalog.list()).map((m) => m.id)).not.toContain('sim-chat');
    await page.getByRole('button', { name: 'Enable' }).click();
    expect(await text(page, '[role=status]')).toContain('Enabled');
    expect(
      await page
        .getByRole('region', { name: /^Replicas of sim-chat/ })
        .getByRole('cell', { name: 'ready' })
        .count(),
    ).toBeGreaterThan(0);
    await lookAt(page, 'operator-model', axeSource);
    await page.getByRole('navigation', { name: 'Operator' }).getByRole('link', { name: 'Engines' }).click();
    await page.waitForURL('**/portal/operator/engines');
    await lookAt(page, 'operator-engines', axeSource);
  }, 30_000);

  it('shows a platform admin the nodes and profiles, and lets them set and remove conversion rates', async () => {
    const page = pages.operator;
    await page.goto(`${gateway.url}/portal/operator/nodes`);
    expect(
      await page
        .getByRole('region', { name: /^Profiles/ })
        .getByRole('cell', { name: profile, exact: true })
        .count(),
    ).toBe(1);
    expect(
      await page
        .getByRole('region', { name: /^Nodes/ })
        .locator('tbody tr')
        .count(),
    ).toBe(1);
    await lookAt(page, 'operator-nodes', axeSource);
    await page.getByRole('navigation', { name: 'Operator' }).getByRole('link', { name: 'Conversion rates' }).click();
    await page.waitForURL('**/portal/operator/rates');
    const setRate = async (fields: { base: string; quote: string; date: string; rate: string }) => {
      await page.getByLabel('Base (rate card)').fill(fields.base);
      await page.getByLabel('Quote (billing)').fill(fields.quote);
      await page.getByLabel('From day (UTC)').fill(fields.date);
      await page.getByLabel('Rate', { exact: true }).fill(fields.rate);
      await page.getByRole('button', { name: 'Save rate' }).click();
    };
    // What the API refuses is refused here, with its reasons.
    await setRate({ base: 'EUR', quote: 'EUR', date: '2026-01-01', rate: '1' });
    expect(await text(page, '[role=alert]')).toContain('Must differ from base.');
    await setRate({ base: 'EUR', quote: 'USD', date: '2026-01-01', rate: '0' });
    expect(await text(page, '[role=alert]')).toContain('Must be greater than 0.');
    await setRate({ base: 'eur', quote: 'usd', date: '2026-01-01', rate: '1.0825' });
    expect(await text(page, '[role=status]')).toContain('Rate saved');
    expect((await gateway.services.costs.conversionRates.list()).map((r) => [r.base, r.quote, r.effectiveOn])).toEqual([
      ['EUR', 'USD', '2026-01-01'],
    ]);
    await lookAt(page, 'operator-rates', axeSource);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Remove EUR to USD of 2026-01-01' }).click();
    expect(await text(page, '[role=status]')).toContain('Rate removed');
    expect(await gateway.services.costs.conversionRates.list()).toEqual([]);
  }, 30_000);

  it("refuses an operator's top-up that the API would refuse, with the reason", async () => {
    const page = pages.operator;
    const before = await gateway.services.wallets.balance(orgId);
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const post = (amount: string, token = csrf) =>
      page.request.post(`${gateway.url}/portal/operator/orgs/${orgId}/topups`, {
        form: { _csrf: token, amount, note: '' },
        headers: { origin: gateway.url },
      });
    for (const amount of ['-5', '0', '1e3', '0.0000000001', '9999999999999', ' ']) {
      const refused = await post(amount);
      expect(refused.status(), amount).toBe(400);
      expect(await refused.text(), amount).toContain('role="alert"');
    }
    expect((await post('1.00', 'x'.repeat(43))).status()).toBe(403);
    expect(await gateway.services.wallets.balance(orgId)).toBe(before);
  }, 30_000);

  it("gives a member the portal's 404 on every operator address, and an unknown address an HTML 404", async () => {
    const page = pages.member;
    expect(await page.getByRole('link', { name: 'Operator' }).count()).toBe(0);
    const before = await gateway.services.wallets.balance(orgId);
    for (const path of [
      '/portal/operator/orgs',
      `/portal/operator/orgs/${orgId}`,
      '/portal/operator/models?model=sim-chat',
      '/portal/operator/engines',
      '/portal/operator/nodes',
      '/portal/operator/rates',
    ]) {
      const answer = await page.goto(`${gateway.url}${path}`);
      expect(answer?.status(), path).toBe(404);
      expect(await text(page, 'h1'), path).toBe('Not found');
    }
    const csrf = await (async () => {
      await page.goto(`${gateway.url}/portal/keys`);
      return page.locator('input[name=_csrf]').first().inputValue();
    })();
    const posts = [
      `orgs/${orgId}/topups`,
      `orgs/${orgId}/currency`,
      'models/enabled',
      'models/price',
      'rates',
      'rates/remove',
    ];
    for (const action of posts) {
      const form = {
        _csrf: csrf,
        amount: '1000.00',
        currency: 'EUR',
        model: 'sim-chat',
        enabled: 'false',
        input_per_million: '0',
        output_per_million: '0',
        base: 'EUR',
        quote: 'USD',
        date: '2026-01-01',
        rate: '9',
      };
      const posted = await page.request.post(`${gateway.url}/portal/operator/${action}`, {
        form,
        headers: { origin: gateway.url },
      });
      expect(posted.status(), action).toBe(404);
    }
    expect((await gateway.services.catalog.list()).map((m) => m.id)).toContain('sim-chat');
    expect(await gateway.services.costs.conversionRates.list()).toEqual([]);
    expect(await gateway.services.wallets.balance(orgId)).toBe(before);
    expect(await gateway.services.costs.billingCurrency(orgId)).toBeNull();
    const unknown = await page.goto(`${gateway.url}/portal/no-such-page`);
    expect(unknown?.status()).toBe(404);
    expect(unknown?.headers()['content-type']).toContain('text/html');
    expect(await text(page, 'h1')).toBe('Not found');
    await lookAt(page, 'not-found', axeSource);
  }, 30_000);
});
