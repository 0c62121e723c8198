import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeEngineContainers } from '../../../src/gateway/engines/docker/engine.js';
import type { EngineStatus } from '../../../src/gateway/engines/types.js';
import { buildSimulatorImage, dockerAvailable, SIM_IMAGE_NODE, SIM_IMAGE_SCRIPT } from '../../helpers/docker.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort } from '../../helpers/processes.js';
import { until } from '../../helpers/wait.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage, textOf } from './browser.js';

const require = createRequire(import.meta.url);
const MODEL = 'sim-chat';
/** This run's deployment: its containers are labelled with it, and only they are removed after. */
const DEPLOYMENT = `t${process.pid}portal`;
const ready = chromiumAvailable() && (await dockerAvailable());

// The operator's engines page on a real Docker engine (replicas of the simulator's image, host
// networking on 127.0.0.1): scale and restart at both widths, the effect seen on the page and in
// the fleet; an engine the operator runs (the simulator) refused with the API's reason; another
// organization's owner and member get 404.
describe.skipIf(!ready)("the operator's engine forms in Chromium, on Docker", () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  let operator: Page;
  let dir: string;
  /** What the gateway logs: each change made here is logged with who made it. */
  const lines: string[] = [];
  const logged = (message: string) =>
    lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.message === message);
  const ops = { email: 'engines-operator@example.com', password: 'engines-operator-password' };
  const owner = { email: 'engines-owner@example.com', password: 'engines-owner-password' };
  const member = { email: 'engines-member@example.com', password: 'engines-member-password' };
  const status = (): EngineStatus => gateway.services.fleet.status().find((e) => e.model === MODEL)!;
  const readyIds = () =>
    status()
      .replicas.filter((r) => r.state === 'ready')
      .map((r) => r.container?.id ?? '')
      .sort();
  /**
   * Containers start in seconds; a minute is the most this waits for the fleet, showing its state
   * if it never comes.
   */
  const fleetWait = { timeout: 60_000, interval: 100, detail: () => status() };
  const replicaRows = () =>
    operator.getByRole('region', { name: new RegExp(`^Replicas of ${MODEL} `) }).locator('tbody tr');

  beforeAll(async () => {
    const image = await buildSimulatorImage();
    await removeEngineContainers(new Docker(), MODEL, DEPLOYMENT);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-portal-engines-'));
    const enginesFile = path.join(dir, 'engines.json');
    const port = await twoFreePorts();
    const docker = {
      kind: 'docker',
      model: MODEL,
      image,
      entrypoint: [SIM_IMAGE_NODE, SIM_IMAGE_SCRIPT],
      hf_repo: 'tollgate/sim-chat',
      served_model_name: MODEL,
      replicas: 1,
      port,
      pull: 'never',
    };
    const simulator = { kind: 'simulator', model: 'sim-embed', task: 'embedding', max_model_len: 512 };
    await writeFile(enginesFile, JSON.stringify({ engines: [{ ...docker, startup_timeout_s: 60 }, simulator] }));
    const env = {
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_ENGINES_FILE: enginesFile,
      TOLLGATE_ENGINE_POLL_MS: '250',
      TOLLGATE_DEPLOYMENT: DEPLOYMENT,
    };
    gateway = await startTestGateway('pglite', env, { log: createLogger('info', (line) => lines.push(line)) });
    const { services } = gateway;
    const opsOrg = await services.orgs.create('Operators');
    await services.users.create({
      orgId: opsOrg.id,
      name: 'Eli Operator',
      email: ops.email,
      password: ops.password,
      role: 'owner',
      platformAdmin: true,
    });
    const tenant = await services.orgs.create('Tenant Org');
    await services.users.create({
      orgId: tenant.id,
      name: 'Oto Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    await services.users.create({
      orgId: tenant.id,
      name: 'Mae Member',
      email: member.email,
      password: member.password,
      role: 'member',
    });
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
    operator = await signedInPage(browser, gateway.url, ops);
    await until('one ready replica', () => readyIds().length === 1, fleetWait);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    await removeEngineContainers(new Docker(), MODEL, DEPLOYMENT);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('scales the Docker engine up at 1280 px and down at 360 px; the page lists the replicas', async () => {
    for (const [width, count] of [
      [1280, 2],
      [360, 1],
    ] as const) {
      await operator.setViewportSize({ width, height: 900 });
      await operator.goto(`${gateway.url}/portal/operator/engines`);
      await operator.getByRole('spinbutton', { name: `Replicas of ${MODEL}` }).fill(String(count));
      await operator.getByRole('button', { name: `Scale ${MODEL}` }).click();
      expect(await textOf(operator, '[role=status]')).toContain('Scaled');
      expect(status().desiredReplicas).toBe(count);
      await until(
        `${count} ready replicas and no other`,
        () => readyIds().length === count && status().replicas.length === count,
        fleetWait,
      );
      await operator.reload();
      expect(await replicaRows().count(), `${width}`).toBe(count);
      const section = operator.locator('section.panel', {
        has: operator.getByRole('heading', { name: MODEL, exact: true }),
      });
      expect(await section.locator('p').first().textContent()).toContain(`${count} of ${count}`);
      if (count === 2) await lookAt(operator, 'operator-engines-scaled', axeSource);
    }
    const operatorId = (await gateway.services.users.findByEmail(ops.email))!.id;
    expect(
      logged('operator scaled an engine in the portal').map((entry) => [entry.model, entry.replicas, entry.by]),
    ).toEqual([
      [MODEL, 2, operatorId],
      [MODEL, 1, operatorId],
    ]);
  }, 150_000);

  it('restarts the Docker engine at each width: every replica replaced, one at a time', async () => {
    for (const width of [1280, 360]) {
      const before = readyIds();
      await operator.setViewportSize({ width, height: 900 });
      await operator.goto(`${gateway.url}/portal/operator/engines`);
      operator.once('dialog', (dialog) => void dialog.accept());
      await operator.getByRole('button', { name: `Restart ${MODEL}` }).click();
      expect(await textOf(operator, '[role=status]')).toContain('Restarting');
      await until(
        'the replica replaced by a new, ready one',
        () => readyIds().length === 1 && !before.includes(readyIds()[0]!),
        fleetWait,
      );
      await operator.reload();
      expect(await replicaRows().first().textContent()).toContain('ready');
    }
    expect(logged('operator restarted an engine in the portal')).toHaveLength(2);
  }, 150_000);

  it('refuses what the API refuses, on the page: a count out of range, an engine the operator runs, no such engine', async () => {
    await operator.goto(`${gateway.url}/portal/operator/engines`);
    for (const [count, reason] of [
      ['65', 'replicas: Too big'],
      ['-1', 'replicas: Must be a whole number.'],
    ]) {
      const field = operator.getByRole('spinbutton', { name: `Replicas of ${MODEL}` });
      await field.evaluate((input) => input.removeAttribute('min'));
      await field.evaluate((input) => input.removeAttribute('max'));
      await field.fill(count!);
      await operator.getByRole('button', { name: `Scale ${MODEL}` }).click();
      expect(await textOf(operator, '[role=alert]'), count).toContain(reason);
      expect(await field.inputValue()).toBe(count);
    }
    expect(await operator.getByRole('button', { name: 'Scale sim-embed' }).count()).toBe(0);
    expect(await operator.getByText('Not run by the gateway').count()).toBe(1);
    await lookAt(operator, 'operator-engines-refused', axeSource);
    const csrf = await operator.locator('input[name=_csrf]').first().inputValue();
    const post = (action: string, model: string) =>
      operator.request.post(`${gateway.url}/portal/operator/engines/${action}`, {
        form: { _csrf: csrf, model, replicas: '2' },
        headers: { origin: gateway.url },
      });
    const simulator = await post('scale', 'sim-embed');
    expect(simulator.status()).toBe(409);
    expect(await simulator.text()).toContain('The simulator engine of sim-embed is not run by the gateway');
    const missing = await post('restart', 'no-such-model');
    expect(missing.status()).toBe(404);
    expect(await missing.text()).toContain('No engine serves model no-such-model.');
    expect(status().desiredReplicas).toBe(1);
  }, 60_000);

  it("gives the owner and a member of another organization the portal's 404 on the page and on both forms", async () => {
    const before = readyIds();
    for (const who of [owner, member]) {
      const page = await signedInPage(browser, gateway.url, who);
      expect((await page.goto(`${gateway.url}/portal/operator/engines`))?.status(), who.email).toBe(404);
      expect(await textOf(page, 'h1')).toBe('Not found');
      await page.goto(`${gateway.url}/portal/keys`);
      const csrf = await page.locator('input[name=_csrf]').first().inputValue();
      for (const action of ['scale', 'restart']) {
        const posted = await page.request.post(`${gateway.url}/portal/operator/engines/${action}`, {
          form: { _csrf: csrf, model: MODEL, replicas: '3' },
          headers: { origin: gateway.url },
        });
        expect(posted.status(), `${who.email} ${action}`).toBe(404);
        expect(posted.headers()['content-type']).toContain('text/html');
      }
      await page.context().close();
    }
    expect(status().desiredReplicas).toBe(1);
    expect(readyIds()).toEqual(before);
  }, 60_000);
});

/** A free port whose next port is free too: replica i of the engine listens on port + i. */
async function twoFreePorts(): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  let port = await freePort();
  while (!(await free(port + 1))) port = await freePort();
  return port;
}
