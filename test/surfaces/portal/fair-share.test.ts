import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBuilt } from '../../../bench/processes.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, repoRoot, type TestChild, waitForHealth } from '../../helpers/processes.js';
import { until } from '../../helpers/wait.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage, textOf } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();

// The operator's Fair share page in Chromium: one loaded replica running one sequence, held by one
// organization's long stream while another's requests wait in the gateway. The operator sees who
// waits, in which band, and each organization's share; a member of another organization gets the
// portal's 404.
describe.skipIf(!ready)("the operator's fair share page in Chromium", () => {
  let gateway: TestGateway;
  let browser: Browser;
  let sim: TestChild;
  let dir: string;
  let axeSource: string;
  const ops = { email: 'share-operator@example.com', password: 'share-operator-password' };
  const member = { email: 'share-member@example.com', password: 'share-member-password' };

  beforeAll(async () => {
    const port = await freePort();
    sim = startBuilt(
      'sim-fair-share-page',
      'dist/sim/main.js',
      ['sim-chat', '--host', '127.0.0.1', '--port', String(port), '--max-num-seqs', '1', '--decode-ms-per-step', '10'],
      { cwd: repoRoot, env: process.env },
    );
    await waitForHealth(sim, `http://127.0.0.1:${port}/health`);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-portal-share-'));
    const file = path.join(dir, 'engines.json');
    const engine = { kind: 'static', model: 'sim-chat', engine: 'vllm', urls: [`http://127.0.0.1:${port}/v1`] };
    await writeFile(file, JSON.stringify({ engines: [{ ...engine, max_num_seqs: 1 }] }));
    gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_ENGINES_FILE: file,
      TOLLGATE_ENGINE_POLL_MS: '200',
    });
    const { services } = gateway;
    const opsOrg = await services.orgs.create('Operators');
    await services.users.create({ orgId: opsOrg.id, name: 'Ida Ops', ...ops, role: 'owner', platformAdmin: true });
    const tenant = await services.orgs.create('Tenant Org');
    await services.users.create({ orgId: tenant.id, name: 'Mo Member', ...member, role: 'member' });
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
    await until('the replica is ready', () => services.fleet.status()[0]!.replicas[0]?.state === 'ready');
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    await sim?.stop('SIGTERM');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const chat = (secret: string, body: Record<string, unknown>, signal?: AbortSignal) =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }], ...body }),
      signal,
    });

  it('shows who waits in which band and each organization its share, at 1280 and 360 px', async () => {
    const busy = await gateway.tenant({ key: { maxConcurrency: 10 } });
    const waiting = await gateway.tenant({ key: { maxConcurrency: 10, band: 'background' } });
    await gateway.services.orgs.setShareWeight(waiting.orgId, 3);
    expect((await chat(busy.secret, { max_tokens: 4 })).status).toBe(200);
    const stop = new AbortController();
    const holder = chat(busy.secret, { max_tokens: 3000, ignore_eos: true, stream: true }, stop.signal);
    await until('the replica is taken', () => gateway.services.flow.snapshot().models[0]?.inFlight === 1);
    const queued = [1, 2].map(() => chat(waiting.secret, { max_tokens: 2 }, stop.signal).catch(() => null));
    await until('two requests wait', () => gateway.services.flow.waiting(waiting.orgId) === 2);
    const page = await signedInPage(browser, gateway.url, ops);
    await page.goto(`${gateway.url}/portal/operator/fair-share`);
    expect(await textOf(page, 'h1')).toBe('Fair share of the fleet');
    const rows = page.getByRole('region', { name: /^Requests waiting/ }).locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(1);
    const cells = await rows.first().locator('td').allTextContents();
    expect(cells).toEqual(['sim-chat', 'background', 'test org', '2']);
    const served = page.getByRole('region', { name: /^Tokens served by organization/ }).locator('tbody tr');
    expect(await served.first().locator('td').allTextContents()).toEqual([
      'test org',
      '1',
      expect.any(String),
      '4',
      '100%',
    ]);
    await lookAt(page, 'operator-fair-share', axeSource);
    stop.abort();
    await (await holder.catch(() => null))?.body?.cancel().catch(() => {});
    await Promise.all(queued);
    await gateway.charged(15_000);
  }, 60_000);

  it("gives another organization's member the portal's 404", async () => {
    const page = await signedInPage(browser, gateway.url, member);
    const answer = await page.goto(`${gateway.url}/portal/operator/fair-share`);
    expect(answer?.status()).toBe(404);
    expect(await textOf(page, 'h1')).toBe('Not found');
  });
});
