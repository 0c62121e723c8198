import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatAmount } from '../../../src/gateway/billing/money.js';
import { batchFile, chatLine, ended, startBatch } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage, textOf } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();

// The Batches page in Chromium: an organization's batches with their progress, cost so far (the
// sum of their lines' usage records) and result files; another organization's member sees none of
// them and gets the portal's 404 for their files.
describe.skipIf(!ready)('the portal’s Batches page in Chromium', () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  let orgId: string;
  let batchId: string;
  const owner = { email: 'batches-owner@example.com', password: 'batches-owner-password' };
  const stranger = { email: 'batches-stranger@example.com', password: 'batches-stranger-password' };

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_SIM_TTFT_MS: '5',
      TOLLGATE_SIM_ITL_MS: '1',
    });
    const { services } = gateway;
    const mine = await gateway.tenant({ credit: '10.00', key: { requestsPerMinute: 100_000, maxConcurrency: 100 } });
    orgId = mine.orgId;
    await services.users.create({ orgId, name: 'Bea Batch', ...owner, role: 'owner' });
    const other = await services.orgs.create('Other Org');
    await services.users.create({ orgId: other.id, name: 'Sam Stranger', ...stranger, role: 'owner' });
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: mine.secret, maxRetries: 0 });
    const file = batchFile(8, '/v1/chat/completions', chatLine);
    batchId = (await ended(client, (await startBatch(client, file, '/v1/chat/completions')).id)).id;
    // One line of the second batch points at another endpoint: the batch has an error file.
    const mixed = Buffer.concat([
      batchFile(2, '/v1/chat/completions', chatLine, 'ok'),
      batchFile(1, '/v1/embeddings', chatLine, 'wrong'),
    ]);
    await ended(client, (await startBatch(client, mixed, '/v1/chat/completions')).id);
    await gateway.charged(15_000);
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  it('lists the batches with progress, cost so far and their files, at 1280 and 360 px', async () => {
    const page = await signedInPage(browser, gateway.url, owner);
    await page.getByRole('link', { name: 'Batches' }).click();
    expect(await textOf(page, 'h1')).toBe('Batches');
    const rows = page.getByRole('region', { name: /^Batches/ }).locator('tbody tr');
    expect(await rows.count()).toBe(2);
    const [mixed, first] = [rows.nth(0), rows.nth(1)];
    const cells = await first.locator('td').allTextContents();
    expect(cells.slice(0, 2)).toEqual([`${batchId}/v1/chat/completions`, 'completed 8 of 8 done']);
    // Cost so far: the records of its lines, to the nano-unit.
    const records = await gateway.services.db.query.usageRecords.findMany({
      where: (r, { eq }) => eq(r.batchId, batchId),
    });
    expect(records).toHaveLength(8);
    expect(cells[2]).toBe(formatAmount(records.reduce((sum, r) => sum + r.cost, 0n)));
    expect(await mixed.locator('td').nth(1).textContent()).toBe('completed 3 of 3 done, 1 failed');
    await lookAt(page, 'batches', axeSource);
    expect(await mixed.getByRole('link').allTextContents()).toEqual(['output', 'errors']);

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      first.getByRole('link', { name: 'output' }).click(),
    ]);
    const lines = (await readFile(await download.path(), 'utf8')).trim().split('\n');
    expect(lines).toHaveLength(8);
    expect(download.suggestedFilename()).toBe(`${batchId}.jsonl`);
  }, 60_000);

  it("shows another organization's member none of them, and their files are a 404", async () => {
    const page = await signedInPage(browser, gateway.url, stranger);
    await page.goto(`${gateway.url}/portal/batches`);
    expect(await page.locator('body').textContent()).toContain('No batches yet.');
    for (const kind of ['output', 'errors', 'nothing']) {
      const answer = await page.goto(`${gateway.url}/portal/batches/${batchId}/${kind}`);
      expect(answer?.status(), kind).toBe(404);
    }
    // The same answer as for a batch that was never made.
    const unknown = await page.goto(`${gateway.url}/portal/batches/batch_${'0'.repeat(32)}/output`);
    expect(unknown?.status()).toBe(404);
  });
});
