import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { eq } from 'drizzle-orm';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodes } from '../../../src/shared/db/schema.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { operatorCall } from '../../platform/runs/harness.js';
import { chromiumAvailable, chromiumPath, lookAt, SHOTS, signedInPage, textOf } from './browser.js';

const require = createRequire(import.meta.url);
const ready = chromiumAvailable();
const WIDTHS = [1280, 360] as const;

interface Listed {
  data: Array<{ id: string; name?: string; address?: string; profile?: string; state?: string }>;
}

// The operator's nodes page: add a profile, add a node, change a node's access, release a node, at
// both widths; and the member and owner of another organization, who get the portal's 404 on every
// one of its forms.
describe.skipIf(!ready)("the operator's nodes and profiles forms in Chromium", () => {
  let gateway: TestGateway;
  let browser: Browser;
  let axeSource: string;
  let operator: Page;
  let tenantOrg: string;
  /** What the gateway logs: each change made here is logged with who made it. */
  const lines: string[] = [];
  const logged = (message: string) =>
    lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.message === message);
  const ops = { email: 'nodes-operator@example.com', password: 'nodes-operator-password' };
  const owner = { email: 'nodes-owner@example.com', password: 'nodes-owner-password' };
  const member = { email: 'nodes-member@example.com', password: 'nodes-member-password' };
  const admin = async (route: string) => (await operatorCall(gateway, 'GET', route)).body as Listed;

  beforeAll(async () => {
    // A key to seal node credentials with, so an access change gets as far as the service's own
    // checks.
    const env = { TOLLGATE_PASSWORD_COST: '10', TOLLGATE_NODE_CREDENTIALS_KEY: randomBytes(32).toString('base64') };
    gateway = await startTestGateway('pglite', env, { log: createLogger('info', (line) => lines.push(line)) });
    const { services } = gateway;
    const opsOrg = await services.orgs.create('Operators');
    await services.users.create({
      orgId: opsOrg.id,
      name: 'Nia Operator',
      email: ops.email,
      password: ops.password,
      role: 'owner',
      platformAdmin: true,
    });
    tenantOrg = (await services.orgs.create('Tenant Org')).id;
    await services.users.create({
      orgId: tenantOrg,
      name: 'Omar Owner',
      email: owner.email,
      password: owner.password,
      role: 'owner',
    });
    await services.users.create({
      orgId: tenantOrg,
      name: 'Mia Member',
      email: member.email,
      password: member.password,
      role: 'member',
    });
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
    axeSource = await readFile(require.resolve('axe-core/axe.min.js'), 'utf8');
    await mkdir(SHOTS, { recursive: true });
    operator = await signedInPage(browser, gateway.url, ops);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
  });

  const form = (name: string) => operator.getByRole('form', { name });

  it('adds a profile at each width, listed on the page and by the admin API; refuses what the API refuses, on the form', async () => {
    for (const width of WIDTHS) {
      await operator.setViewportSize({ width, height: 900 });
      await operator.goto(`${gateway.url}/portal/operator/nodes`);
      await form('Add a profile').getByLabel('Name').fill(`l4x${width}`);
      await form('Add a profile').getByLabel('GPUs per node').fill('2');
      await form('Add a profile').getByLabel('GPU model (optional)').fill('L4 24GB');
      await form('Add a profile').getByRole('button', { name: 'Add profile' }).click();
      expect(await textOf(operator, '[role=status]')).toContain('Profile added');
      const row = operator
        .getByRole('region', { name: /^Profiles/ })
        .getByRole('row', { name: new RegExp(`^l4x${width} `) });
      expect(await row.textContent()).toContain('2 × L4 24GB');
    }
    expect((await admin('/profiles')).data.map((p) => p.name)).toEqual(['l4x1280', 'l4x360']);
    await lookAt(operator, 'operator-nodes-profile-added', axeSource);
    const refused = async (name: string, gpus: string, reason: string) => {
      await form('Add a profile').getByLabel('Name').fill(name);
      await form('Add a profile').getByLabel('GPUs per node').fill(gpus);
      await form('Add a profile').getByRole('button', { name: 'Add profile' }).click();
      expect(await textOf(operator, '[role=alert]'), name).toContain(reason);
      // What was typed stays on the form.
      expect(await form('Add a profile').getByLabel('Name').inputValue()).toBe(name);
    };
    await refused('Big GPUs', '8', 'Use 1-63 of a-z 0-9');
    await refused('h100', '65', 'gpus per node');
    await refused('h100', 'eight', 'gpus per node: Must be a whole number.');
    await refused('l4x360', '2', 'A profile named l4x360 exists already.');
    expect((await admin('/profiles')).data).toHaveLength(2);
  }, 60_000);

  it('adds a node of a profile at each width, listed by the admin API; SSH access is checked as the API checks it', async () => {
    for (const width of WIDTHS) {
      await operator.setViewportSize({ width, height: 900 });
      await operator.goto(`${gateway.url}/portal/operator/nodes`);
      await form('Add a node').getByLabel('Profile').selectOption(`l4x${width}`);
      await form('Add a node').getByLabel('Address (host name or IP)').fill(`gpu-${width}.internal`);
      await form('Add a node').getByRole('button', { name: 'Add node' }).click();
      expect(await textOf(operator, '[role=status]')).toContain('Node added');
      const row = operator
        .getByRole('region', { name: /^Nodes/ })
        .getByRole('row', { name: new RegExp(`^gpu-${width}\\.internal `) });
      expect(await row.textContent()).toContain(`free`);
    }
    const listed = (await admin('/nodes')).data.map((n) => [n.address, n.profile, n.state]);
    expect(listed).toEqual([
      ['gpu-1280.internal', 'l4x1280', 'free'],
      ['gpu-360.internal', 'l4x360', 'free'],
    ]);
    const add = async (fields: Record<string, string>, reason: string) => {
      await operator.goto(`${gateway.url}/portal/operator/nodes`);
      for (const [label, value] of Object.entries(fields)) await form('Add a node').getByLabel(label).fill(value);
      await form('Add a node').getByRole('button', { name: 'Add node' }).click();
      expect(await textOf(operator, '[role=alert]'), JSON.stringify(fields)).toContain(reason);
    };
    await add({ 'Address (host name or IP)': 'gpu-360.internal' }, 'A node at gpu-360.internal exists already.');
    await add({ 'Address (host name or IP)': 'two words' }, 'A host name or an IP address.');
    await add({ 'Address (host name or IP)': 'ssh.internal', 'SSH user': 'ops' }, 'ssh.private key: Required.');
    await add(
      { 'Address (host name or IP)': 'ssh.internal', 'SSH user': 'ops', 'Host key fingerprint': 'MD5:aa' },
      'SHA256: and 43 base64 characters',
    );
    // The private key is never sent back in the page.
    await add(
      { 'Address (host name or IP)': 'ssh.internal', 'Private key (OpenSSH or PEM, unencrypted)': 'not a key' },
      'private key',
    );
    expect(await operator.content()).not.toContain('not a key');
    expect((await admin('/nodes')).data).toHaveLength(2);
    await lookAt(operator, 'operator-nodes-refused', axeSource);
  }, 60_000);

  it("refuses a node's access change the API refuses, and releases a node left releasing", async () => {
    const [node] = (await admin('/nodes')).data;
    await operator.goto(`${gateway.url}/portal/operator/nodes`);
    const access = form("Change a node's SSH access");
    await access.getByLabel('Node').selectOption(node!.id);
    await access.getByRole('button', { name: 'Save access' }).click();
    expect(await textOf(operator, '[role=alert]')).toContain('Give at least one of the SSH fields');
    await access.getByLabel('Host key fingerprint').fill(`SHA256:${'A'.repeat(43)}`);
    await access.getByRole('button', { name: 'Save access' }).click();
    // A node added without SSH access must be given all of it: the service's reason, on the form.
    expect(await textOf(operator, '[role=alert]')).toContain(`Node ${node!.id} has no SSH access yet: give all of it.`);
    // A node a deleted cluster's key is still on (its removal failed) is `releasing`: the operator
    // frees it here.
    const { services } = gateway;
    const made = await services.clusters.create({
      orgId: tenantOrg,
      name: 'gone',
      profile: node!.profile!,
      nodeCount: 1,
      publicDomain: 'gone.example.com',
      createdBy: null,
    });
    await services.clusters.delete(made.cluster.id, tenantOrg);
    // At 1280 px released without removing the key (force), at 360 px by removing it (nothing to
    // remove: no SSH access).
    for (const width of WIDTHS) {
      await services.db.update(nodes).set({ releasingClusterId: made.cluster.id }).where(eq(nodes.id, node!.id));
      await operator.setViewportSize({ width, height: 900 });
      await operator.goto(`${gateway.url}/portal/operator/nodes`);
      const row = operator
        .getByRole('region', { name: /^Nodes/ })
        .getByRole('row', { name: new RegExp(`^${node!.address!.replaceAll('.', '\\.')} `) });
      expect(await row.getByRole('cell').nth(1).textContent()).toBe('releasing');
      if (width === 1280) {
        await lookAt(operator, 'operator-nodes-releasing', axeSource);
        await row.getByLabel('without removing the key').check();
      }
      await row.getByRole('button', { name: `Release ${node!.address}` }).click();
      expect(await textOf(operator, '[role=status]')).toContain('Node released');
      expect((await admin('/nodes')).data.find((n) => n.id === node!.id)?.state, `${width}`).toBe('free');
    }
    expect((await admin('/nodes')).data.find((n) => n.id === node!.id)?.state).toBe('free');
    const operatorId = (await gateway.services.users.findByEmail(ops.email))!.id;
    expect(logged('operator added a profile in the portal').map((entry) => [entry.profile, entry.by])).toEqual([
      ['l4x1280', operatorId],
      ['l4x360', operatorId],
    ]);
    expect(logged('operator added a node in the portal').map((entry) => entry.address)).toEqual([
      'gpu-1280.internal',
      'gpu-360.internal',
    ]);
    expect(
      logged('operator released a node in the portal').map((entry) => [entry.nodeId, entry.force, entry.by]),
    ).toEqual([
      [node!.id, true, operatorId],
      [node!.id, false, operatorId],
    ]);
    // A node that is not releasing cannot be released: the service's reason, on the page.
    const csrf = await operator.locator('input[name=_csrf]').first().inputValue();
    const posted = await operator.request.post(`${gateway.url}/portal/operator/nodes/release`, {
      form: { _csrf: csrf, node: node!.id },
      headers: { origin: gateway.url },
    });
    expect(posted.status()).toBe(409);
    expect(await posted.text()).toContain(`Node ${node!.id} is not releasing: it is free.`);
  }, 60_000);

  it("gives the owner and a member of another organization the portal's 404 on the page and on every form", async () => {
    const before = { profiles: await admin('/profiles'), nodes: await admin('/nodes') };
    const [node] = before.nodes.data;
    for (const who of [owner, member]) {
      const page = await signedInPage(browser, gateway.url, who);
      const answer = await page.goto(`${gateway.url}/portal/operator/nodes`);
      expect(answer?.status(), who.email).toBe(404);
      expect(await textOf(page, 'h1')).toBe('Not found');
      await page.goto(`${gateway.url}/portal/keys`);
      const csrf = await page.locator('input[name=_csrf]').first().inputValue();
      const fields = {
        _csrf: csrf,
        name: 'stolen',
        gpus: '1',
        profile: 'l4x360',
        address: 'evil.internal',
        node: node!.id,
        force: 'true',
        host_key_fingerprint: `SHA256:${'B'.repeat(43)}`,
      };
      for (const action of ['profiles', '', 'access', 'release']) {
        const posted = await page.request.post(`${gateway.url}/portal/operator/nodes${action ? `/${action}` : ''}`, {
          form: fields,
          headers: { origin: gateway.url },
        });
        expect(posted.status(), `${who.email} ${action}`).toBe(404);
        expect(posted.headers()['content-type'], action).toContain('text/html');
      }
      await page.context().close();
    }
    expect(await admin('/profiles')).toEqual(before.profiles);
    expect(await admin('/nodes')).toEqual(before.nodes);
  }, 60_000);
});
