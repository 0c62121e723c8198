import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { parse } from 'csv-parse/sync';
import { sql } from 'drizzle-orm';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();

describe.skipIf(!ready)('the portal’s costs page in Chromium', () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  const owner = { email: 'costs-owner@example.com', password: 'costs-owner-password' };
  const member = { email: 'costs-member@example.com', password: 'costs-member-password' };

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10' });
    const { orgs, users, clusters, costs, db } = gateway.services;
    const org = await orgs.create('Costs Org');
    const ownerRow = await users.create({
      orgId: org.id,
      name: 'Olga Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    await users.create({
      orgId: org.id,
      name: 'Mo Member',
      email: member.email,
      password: member.password,
      role: 'member',
    });
    await clusters.addProfile({ name: 'a100x8', gpusPerNode: 8 });
    await clusters.addProfile({ name: 'cpu', gpusPerNode: 0 });
    await clusters.addProfile({ name: 'l4x2', gpusPerNode: 2 });
    for (const [profile, count] of [
      ['a100x8', 2],
      ['cpu', 1],
      ['l4x2', 1],
    ] as const)
      for (let i = 0; i < count; i++) await clusters.addNode({ profile, address: `${profile}-${i}.internal` });
    await costs.rateCards.add({
      profile: 'a100x8',
      currency: 'USD',
      nodeHourPrice: '2.50',
      gpuHourPrice: '0.40',
      effectiveFrom: new Date('2025-01-01T00:00:00Z'),
      effectiveTo: null,
    });
    await costs.rateCards.add({
      profile: 'a100x8',
      currency: 'USD',
      nodeHourPrice: '3',
      gpuHourPrice: '0.5',
      effectiveFrom: new Date('2025-02-15T12:00:00Z'),
      effectiveTo: null,
    });
    await costs.rateCards.add({
      profile: 'cpu',
      currency: 'KWD',
      nodeHourPrice: '0.1235',
      gpuHourPrice: '0',
      effectiveFrom: new Date('2025-01-01T00:00:00Z'),
      effectiveTo: null,
    });
    await costs.conversionRates.set({ base: 'USD', quote: 'EUR', effectiveOn: '2025-02-01', rate: '0.92' });
    const make = async (name: string, profile: string, nodes: number, from: string, to: string | null) => {
      const { cluster } = await clusters.create({
        orgId: org.id,
        name,
        profile,
        nodeCount: nodes,
        publicDomain: `${name}.example.com`,
        createdBy: ownerRow.id,
      });
      if (to) await clusters.delete(cluster.id, org.id);
      await db.execute(
        sql`update node_allocations set allocated_at = ${from}::timestamptz, released_at = ${to}::timestamptz where cluster_id = ${cluster.id}`,
      );
    };
    await make('training', 'a100x8', 2, '2025-01-31T22:00:00Z', '2025-02-20T10:00:07Z');
    await make('etl', 'cpu', 1, '2025-02-10T00:00:00Z', '2025-02-11T06:00:30Z');
    await make('notebooks', 'l4x2', 1, '2025-02-27T00:00:00Z', null);
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  async function signedInPage(who: { email: string; password: string }): Promise<Page> {
    const page = await (await browser.newContext({ bypassCSP: true })).newPage();
    await page.goto(`${gateway.url}/portal/sign-in`);
    await page.getByLabel('Email').fill(who.email);
    await page.getByLabel('Password').fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/portal\/overview/);
    return page;
  }

  const look = (page: Page, name: string) => lookAt(page, name, axeSource);

  const cells = async (page: Page) =>
    page
      .locator('details.org tbody tr')
      .evaluateAll((rows) =>
        rows.map((row) => [...row.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim())),
      );

  it('picks a month, shows totals and the clusters, switches the billing currency, flags the line without a rate, and downloads the CSV', async () => {
    const page = await signedInPage(owner);
    await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Costs' }).click();
    await page.waitForURL(/\/portal\/costs$/);
    expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Costs');
    await page.getByLabel('Window').selectOption('month');
    await page.getByLabel('Month (UTC)').fill('2025-02');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/month=2025-02/);
    expect(await page.locator('#totals').textContent()).toBe('2025-02-01 to 2025-02-28');
    // Native currencies: USD for the GPUs, KWD for the CPU node; the L4 node is unrated.
    const figures = await page.locator('.figure').allTextContents();
    expect(figures).toEqual(['3.706 KWD + 5619.23 USD', '1010.012222', '7552.031111', '48.000000']);
    expect(await page.locator('details.org').getAttribute('open')).toBe('');
    expect(await cells(page)).toEqual([
      [
        'etl (deleted)',
        'cpu',
        '30.008333',
        '0.000000',
        '—',
        '3.706 KWD',
        '—',
        '2025-02-10 00:00:00 – 2025-02-11 06:00:30',
        '0.1235 KWD / node-h + 0 / GPU-h',
      ],
      [
        'notebooks',
        'l4x2',
        '48.000000',
        '96.000000',
        '48.000000',
        'unrated',
        '—',
        '2025-02-27 00:00:00 – 2025-03-01 00:00:00',
        'none',
      ],
      [
        'training (deleted)',
        'a100x8',
        '696.000000',
        '5568.000000',
        '—',
        '3967.20 USD',
        '—',
        '2025-02-01 00:00:00 – 2025-02-15 12:00:00',
        '2.5 USD / node-h + 0.4 / GPU-h',
      ],
      [
        'training (deleted)',
        'a100x8',
        '236.003889',
        '1888.031111',
        '—',
        '1652.03 USD',
        '—',
        '2025-02-15 12:00:00 – 2025-02-20 10:00:07',
        '3 USD / node-h + 0.5 / GPU-h',
      ],
    ]);
    await look(page, 'costs-native');

    // The switch: EUR, with a USD→EUR rate and none for KWD.
    await page.getByLabel('Billing currency').selectOption('EUR');
    await page.getByRole('button', { name: 'Set billing currency' }).click();
    await page.waitForURL(/done=currency/);
    expect(new URL(page.url()).searchParams.get('month')).toBe('2025-02');
    expect(await page.getByRole('status').textContent()).toBe(
      'Costs are now shown in EUR where a conversion rate is set.',
    );
    expect(await page.locator('.figure').first().textContent()).toBe('5169.69 EUR + 3.706 KWD');
    expect((await page.locator('p.flag').textContent())?.trim()).toBe(
      '⚠ 1 line is not converted to the billing currency: no conversion rate was set for its currency. It keeps its own currency.',
    );
    const flagged = page.locator('tr.flagged');
    expect(await flagged.count()).toBe(1);
    expect(await flagged.locator('td').first().textContent()).toBe('⚠ etl (deleted)');
    expect(await flagged.locator('strong.flag').textContent()).toBe('⚠ Not converted: no rate');
    expect((await cells(page))[2]!.slice(5, 7)).toEqual(['3649.82 EUR', 'from 3967.20 USD at 0.92 (2025-02-01)']);
    await look(page, 'costs-converted');

    // The CSV of the same window, with the session.
    const href = await page.getByRole('link', { name: 'Download the line items as CSV' }).getAttribute('href');
    expect(href).toBe('/portal/costs.csv?window=month&month=2025-02');
    const csv = await page.request.get(`${gateway.url}${href}`);
    expect(csv.headers()['content-disposition']).toBe(
      'attachment; filename="tollgate-costs_20250201T000000Z_20250301T000000Z.csv"',
    );
    const rows: Record<string, string>[] = parse(await csv.text(), { columns: true });
    expect(rows.map((row) => [row.ResourceName, row.BilledCost, row.BillingCurrency, row.x_ConversionSkipped])).toEqual(
      [
        ['etl', '3.706', 'KWD', 'true'],
        ['notebooks', '', '', 'false'],
        ['training', '3649.82', 'EUR', 'false'],
        ['training', '1519.87', 'EUR', 'false'],
      ],
    );

    // A custom window: the day the cluster crossed into February, 22:00 to midnight of 31 January.
    await page.getByLabel('Window').selectOption('custom');
    await page.getByLabel('From (UTC)').fill('2025-01-31');
    await page.getByLabel('To, included (UTC)').fill('2025-01-31');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/window=custom/);
    expect(await page.locator('.figure').allTextContents()).toEqual(['22.80 USD', '4.000000', '32.000000', '0.000000']);
    // No USD→EUR rate before 1 February: the January line keeps USD, flagged.
    expect(await page.locator('tr.flagged').count()).toBe(1);

    // Clearing it goes back to native currencies.
    await page.getByLabel('Billing currency').selectOption('');
    await page.getByRole('button', { name: 'Set billing currency' }).click();
    await page.waitForURL(/done=currency/);
    expect(await page.getByRole('status').textContent()).toBe("Costs are now shown in each rate card's own currency.");
  });

  it('shows members the costs without the switch, and refuses a switch from them', async () => {
    const page = await signedInPage(member);
    await page.goto(`${gateway.url}/portal/costs?window=month&month=2025-02`);
    expect(await page.locator('.figure').first().textContent()).toBe('3.706 KWD + 5619.23 USD');
    expect(await page.getByLabel('Billing currency').count()).toBe(0);
    const csrf = await page.locator('header input[name="_csrf"]').getAttribute('value');
    const refused = await page.request.post(`${gateway.url}/portal/costs/currency`, {
      form: { _csrf: csrf!, currency: 'EUR' },
      headers: { origin: gateway.url },
    });
    expect(refused.status()).toBe(403);
    expect(
      await gateway.services.costs.billingCurrency(
        (await gateway.services.users.list(null, { offset: 0, limit: 10, sort: 'created_at' })).rows[0]!.orgId,
      ),
    ).toBeNull();
    // A bad window falls back to this month, saying why.
    await page.goto(`${gateway.url}/portal/costs?window=custom&from=2025-03-01&to=2025-02-01`);
    expect(await page.getByRole('alert').textContent()).toBe('Must be after from. Showing this month.');
    await look(page, 'costs-member');
  });
});
