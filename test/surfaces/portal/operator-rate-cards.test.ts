import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/shared/http/log.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { operatorCall } from '../../platform/runs/harness.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage, textOf } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();
const WIDTHS = [1280, 360] as const;

interface Card {
  id: string;
  profile: string;
  currency: string;
  node_hour_price: string;
  gpu_hour_price: string;
  effective_from: string;
  effective_to: string | null;
}

// The operator's rate cards page: list (all, or a profile's), add and delete at both widths, each
// refusal of the API shown on the form; and the member and owner of another organization, who get
// the portal's 404 there.
describe.skipIf(!ready)("the operator's rate cards page in Chromium", () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  let operator: Page;
  let operatorId: string;
  /** What the gateway logs: each change made here is logged with who made it. */
  const lines: string[] = [];
  const logged = (message: string) =>
    lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.message === message);
  const ops = { email: 'cards-operator@example.com', password: 'cards-operator-password' };
  const owner = { email: 'cards-owner@example.com', password: 'cards-owner-password' };
  const member = { email: 'cards-member@example.com', password: 'cards-member-password' };
  const listed = async (query = '') =>
    ((await operatorCall(gateway, 'GET', `/rate-cards${query}`)).body as { data: Card[] }).data;

  beforeAll(async () => {
    gateway = await startTestGateway(
      'pglite',
      { TOLLGATE_PASSWORD_COST: '10' },
      { log: createLogger('info', (line) => lines.push(line)) },
    );
    const { services } = gateway;
    const opsOrg = await services.orgs.create('Operators');
    operatorId = (
      await services.users.create({
        orgId: opsOrg.id,
        name: 'Rae Operator',
        email: ops.email,
        password: ops.password,
        role: 'owner',
        platformAdmin: true,
      })
    ).id;
    const tenant = await services.orgs.create('Tenant Org');
    await services.users.create({
      orgId: tenant.id,
      name: 'Ola Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    await services.users.create({
      orgId: tenant.id,
      name: 'Meg Member',
      email: member.email,
      password: member.password,
      role: 'member',
    });
    await services.clusters.addProfile({ name: 'a100x8', gpusPerNode: 8 });
    await services.clusters.addProfile({ name: 'cpu', gpusPerNode: 0 });
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
    operator = await signedInPage(browser, gateway.url, ops);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  async function addCard(fields: {
    profile: string;
    currency: string;
    node: string;
    gpu: string;
    from: string;
    to?: string;
  }): Promise<void> {
    const form = operator.getByRole('form', { name: 'Add a rate card' });
    await form.getByLabel('Profile').selectOption(fields.profile);
    await form.getByLabel('Currency').fill(fields.currency);
    await form.getByLabel('Node-hour price').fill(fields.node);
    await form.getByLabel('GPU-hour price').fill(fields.gpu);
    await form.getByLabel('From day (UTC)').fill(fields.from);
    await form.getByLabel('To day (UTC, optional)').fill(fields.to ?? '');
    await form.getByRole('button', { name: 'Add rate card' }).click();
  }

  it('adds a rate card at each width, listed on the page and by the admin API; a new open card ends the one before it', async () => {
    const days = { 1280: '2026-01-01', 360: '2026-03-01' } as const;
    for (const width of WIDTHS) {
      await operator.setViewportSize({ width, height: 900 });
      await operator.goto(`${gateway.url}/portal/operator/rate-cards`);
      await addCard({
        profile: 'a100x8',
        currency: 'usd',
        node: width === 1280 ? '2.50' : '3',
        gpu: '0.40',
        from: days[width],
      });
      expect(await textOf(operator, '[role=status]')).toContain('Rate card added');
      const row = operator
        .getByRole('region', { name: /^Rate cards/ })
        .getByRole('row', { name: new RegExp(`^a100x8 ${width === 1280 ? '2\\.5' : '3'} USD`) });
      expect(await row.textContent()).toContain('0.4 USD');
    }
    const cards = await listed();
    expect(
      cards.map((c) => [c.profile, c.currency, c.node_hour_price, c.gpu_hour_price, c.effective_from, c.effective_to]),
    ).toEqual([
      ['a100x8', 'USD', '2.5', '0.4', '2026-01-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
      ['a100x8', 'USD', '3', '0.4', '2026-03-01T00:00:00.000Z', null],
    ]);
    await operator.goto(`${gateway.url}/portal/operator/rate-cards`);
    await addCard({ profile: 'cpu', currency: 'EUR', node: '0.1235', gpu: '0', from: '2026-02-01', to: '2026-12-01' });
    expect(await textOf(operator, '[role=status]')).toContain('Rate card added');
    await lookAt(operator, 'operator-rate-cards', axeSource);
    // The filter shows one profile's cards.
    await operator.getByLabel('Profile', { exact: true }).first().selectOption('cpu');
    await operator.getByRole('button', { name: 'Filter' }).click();
    await operator.waitForURL(/profile=cpu/);
    expect(
      await operator
        .getByRole('region', { name: /^Rate cards/ })
        .locator('tbody tr')
        .count(),
    ).toBe(1);
    expect(await textOf(operator, 'tbody tr')).toContain('0.1235 EUR');
  }, 60_000);

  it('refuses what the API refuses, with its reason on the form and what was typed kept', async () => {
    await operator.goto(`${gateway.url}/portal/operator/rate-cards`);
    const refused = async (fields: Parameters<typeof addCard>[0], reason: string) => {
      await addCard(fields);
      expect(await textOf(operator, '[role=alert]'), JSON.stringify(fields)).toContain(reason);
      expect(
        await operator.getByRole('form', { name: 'Add a rate card' }).getByLabel('Node-hour price').inputValue(),
      ).toBe(fields.node);
    };
    const card = { profile: 'cpu', currency: 'EUR', node: '1', gpu: '0', from: '2026-06-01' };
    await refused({ ...card, node: '1.5e3' }, 'node hour price: Must be a decimal such as 2.50');
    await refused({ ...card, currency: 'EU' }, 'currency');
    await refused({ ...card, to: '2026-05-01' }, 'effective to: Must be after effective_from.');
    await refused(card, 'cards of a profile cannot overlap');
    expect(await listed()).toHaveLength(3);
    await lookAt(operator, 'operator-rate-cards-refused', axeSource);
  }, 60_000);

  it('deletes a rate card at each width, gone from the admin API', async () => {
    for (const width of WIDTHS) {
      await operator.setViewportSize({ width, height: 900 });
      await operator.goto(`${gateway.url}/portal/operator/rate-cards?profile=a100x8`);
      const [first] = await listed('?profile=a100x8');
      operator.once('dialog', (dialog) => void dialog.accept());
      await operator
        .getByRole('button', { name: `Delete the a100x8 rate card from ${first!.effective_from.slice(0, 10)}` })
        .click();
      expect(await textOf(operator, '[role=status]')).toContain('Rate card deleted');
      expect((await listed()).map((c) => c.id)).not.toContain(first!.id);
    }
    expect((await listed()).map((c) => c.profile)).toEqual(['cpu']);
    expect(logged('operator added a rate card in the portal').map((entry) => [entry.profile, entry.by])).toEqual([
      ['a100x8', operatorId],
      ['a100x8', operatorId],
      ['cpu', operatorId],
    ]);
    expect(logged('operator deleted a rate card in the portal').map((entry) => entry.by)).toEqual([
      operatorId,
      operatorId,
    ]);
    // A card that is gone: the service's 404, on the page.
    const csrf = await operator.locator('input[name=_csrf]').first().inputValue();
    const posted = await operator.request.post(`${gateway.url}/portal/operator/rate-cards/delete`, {
      form: { _csrf: csrf, id: 'rate_gone' },
      headers: { origin: gateway.url },
    });
    expect(posted.status()).toBe(404);
    expect(await posted.text()).toContain('Rate card rate_gone does not exist.');
  }, 60_000);

  it("gives the owner and a member of another organization the portal's 404 on the page and on both forms", async () => {
    const before = await listed();
    for (const who of [owner, member]) {
      const page = await signedInPage(browser, gateway.url, who);
      expect((await page.goto(`${gateway.url}/portal/operator/rate-cards`))?.status(), who.email).toBe(404);
      expect(await textOf(page, 'h1')).toBe('Not found');
      expect(await page.getByRole('link', { name: 'Operator' }).count()).toBe(0);
      await page.goto(`${gateway.url}/portal/keys`);
      const csrf = await page.locator('input[name=_csrf]').first().inputValue();
      const form = {
        _csrf: csrf,
        id: before[0]!.id,
        profile: 'cpu',
        currency: 'USD',
        node_hour_price: '0',
        gpu_hour_price: '0',
        from: '2030-01-01',
      };
      for (const action of ['', '/delete']) {
        const posted = await page.request.post(`${gateway.url}/portal/operator/rate-cards${action}`, {
          form,
          headers: { origin: gateway.url },
        });
        expect(posted.status(), `${who.email} ${action}`).toBe(404);
        expect(posted.headers()['content-type']).toContain('text/html');
      }
      await page.context().close();
    }
    expect(await listed()).toEqual(before);
  }, 60_000);
});
