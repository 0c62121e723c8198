import { existsSync } from 'node:fs';
import http from 'node:http';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiAs, orgWithUsers } from '../api/harness.js';
import { availableStores, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { readSse } from '../helpers/sse.js';
import { zipOf } from '../helpers/zip.js';
import { FAKE_MODULE, orgWithCluster, runEnded, runScratch } from './harness.js';

const stores = await availableStores();

describe.each(stores)('runs: stacks applied to clusters through the tool (%s)', (store) => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;

  beforeAll(async () => {
    scratch = await runScratch();
    gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10', ...scratch.env });
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
  });

  it('applies: init, apply and output in a fresh folder with the inputs, the platform variables and the key file; APPLIED with outputs', async () => {
    // A global stack (its owner is a platform admin): any member of the organization may apply it.
    const { member, users, cluster, stackName } = await orgWithCluster(gateway, { globalStack: true });
    const queued = await member('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'first', count: 3 } });
    expect(queued.status).toBe(201);
    expect(queued.body).toMatchObject({ cluster_id: cluster.id, stack: stackName, target: null, state: 'QUEUED', inputs: { name: 'first', count: 3, mode: 'ok', port: 0, password: '' } });
    const run = await runEnded(member, queued.body.id);
    expect(run).toMatchObject({ state: 'APPLIED', exit_code: 0, failure: null, public_url: null, outputs: { greeting: `hello ${cluster.id}`, token: null } });
    expect(Date.parse(run.finished_at)).toBeGreaterThanOrEqual(Date.parse(run.started_at));

    const calls = (await scratch.read()).filter((record) => record.vars.tollgate_cluster_id === cluster.id);
    expect(calls.map((call) => [call.command, ...call.args])).toEqual([
      ['init', '-input=false', '-no-color'],
      ['apply', '-auto-approve', '-input=false', '-no-color'],
      ['output', '-json', '-no-color'],
    ]);
    const apply = calls[1]!;
    expect(path.basename(apply.cwd)).toBe('module');
    expect(apply.cwd.startsWith(scratch.workDir)).toBe(true);
    // The inputs, and the platform variables the module declares (not those it does not: tollgate_public_domain).
    expect(apply.vars).toEqual({
      mode: 'ok',
      count: 3,
      port: 0,
      password: '',
      name: 'first',
      tollgate_cluster_id: cluster.id,
      tollgate_node_addresses: cluster.nodes.map((node) => node.address),
      tollgate_target_node: '',
      tollgate_ssh_private_key_file: expect.stringMatching(/\/ssh\/id_ed25519$/),
    });
    expect(apply.keyFileMode).toBe('600');
    expect(apply.keyFileStart).toBe('-----BEGIN OPENSSH PRIVATE KEY-----');
    expect(path.relative(apply.cwd, apply.vars.tollgate_ssh_private_key_file as string).startsWith('..')).toBe(true);
    // The tool's environment is the allow-list and what TOLLGATE_RUN_ENV passes: none of the gateway's settings.
    expect(Object.keys(apply.env).sort()).toEqual(['CHECKPOINT_DISABLE', 'FAKE_TOFU_RECORDS', 'HOME', 'LANG', 'PATH', 'TF_INPUT', 'TF_IN_AUTOMATION']);
    expect(apply.env).toMatchObject({ TF_IN_AUTOMATION: '1', TF_INPUT: '0' });
    // The run's folder, key file included, is gone.
    expect(existsSync(path.dirname(apply.cwd))).toBe(false);

    const log = await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, { headers: { authorization: `Bearer ${users[1]!.key}` } });
    expect(log.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await log.text();
    expect(text).toContain(`[tollgate] Applying stack ${stackName} to cluster lab`);
    expect(text).toContain('fake: step 3 of 3');
    expect(text).toContain('Apply complete!');
    expect(text.indexOf('Initializing the backend')).toBeLessThan(text.indexOf('fake: step 1'));
  });

  it('targets one node; keeps the state between runs; refuses a node of another cluster', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(gateway);
    const node = cluster.nodes[1]!;
    const first = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, target: { node_id: node.id }, inputs: { name: 'a' } });
    expect(first.body.target).toEqual({ node_id: node.id });
    expect((await runEnded(owner, first.body.id)).state).toBe('APPLIED');
    const second = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'b' } });
    expect((await runEnded(owner, second.body.id)).state).toBe('APPLIED');
    const applies = (await scratch.read()).filter((r) => r.command === 'apply' && r.vars.tollgate_cluster_id === cluster.id);
    expect(applies.map((r) => [r.vars.tollgate_target_node, r.stateSerial])).toEqual([
      [node.address, null],
      ['', 1],
    ]);
    const other = await orgWithCluster(gateway);
    const refused = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, target: { node_id: other.cluster.nodes[0]!.id }, inputs: { name: 'c' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([{ field: 'target.node_id', message: 'Not a node of this cluster.' }]);
  });

  it('checks the inputs against the declarations, all errors at once, and the profile against applicable_profiles; nothing is queued', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(gateway);
    const bad = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { count: 'three', colour: 'red', mode: 7 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    expect(bad.body.error.details).toEqual(
      expect.arrayContaining([
        { field: 'inputs.colour', message: 'The stack declares no input colour.' },
        { field: 'inputs.count', message: 'Must be a number.' },
        { field: 'inputs.mode', message: 'Must be a string.' },
        { field: 'inputs.name', message: 'Required.' },
      ]),
    );
    expect(bad.body.error.details).toHaveLength(4);
    const wrongProfile = await owner('PATCH', `/stacks/${stackName}`, { applicable_profiles: ['h100x8'] });
    expect(wrongProfile.status).toBe(200);
    const refused = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details[0].field).toBe('stack');
    expect((await owner('GET', `/clusters/${cluster.id}/runs`)).body.pagination.total).toBe(0);
    expect((await owner('POST', `/clusters/${cluster.id}/runs`, { stack: 'no-such-stack', inputs: {} })).status).toBe(404);
  });

  it('a failing tool ends the run FAILED with its exit status and its error in the log', async () => {
    const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
    const failed = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'fail' } })).body.id);
    expect(failed).toMatchObject({ state: 'FAILED', exit_code: 2, failure: `fake-tofu.mjs apply exited with 2.`, outputs: null });
    const initFailed = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'init-fails' } })).body.id);
    expect(initFailed).toMatchObject({ state: 'FAILED', exit_code: 1, failure: 'fake-tofu.mjs init exited with 1.' });
    const log = await textLog(users[0]!.key, failed.id);
    expect(log).toContain('Error: the fake provider refused');
    expect(log).toContain('[tollgate] FAILED: fake-tofu.mjs apply exited with 2.');
  });

  it('one active run per cluster and stack (409); another stack or cluster goes ahead; the next run once it ended', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(gateway);
    const hanging = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'hang' } });
    const second = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'y' } });
    expect(second.status).toBe(409);
    expect(second.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(hanging.body.id) });
    const other = await orgWithCluster(gateway, { stackName: `${stackName}-b` });
    expect((await other.owner('POST', `/clusters/${other.cluster.id}/runs`, { stack: other.stackName, inputs: { name: 'z' } })).status).toBe(201);
    expect((await owner('POST', `/runs/${hanging.body.id}/cancel`)).status).toBe(200);
    const third = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'y' } });
    expect(third.status).toBe(201);
    expect((await runEnded(owner, third.body.id)).state).toBe('APPLIED');
  });

  it('cancel signals the tool and waits for it: CANCELED, the process gone, even one that ignores SIGINT', async () => {
    const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
    for (const mode of ['hang', 'hang-hard']) {
      const queued = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode } });
      await waitFor(async () => (await scratch.read()).some((r) => r.command === 'apply' && r.vars.tollgate_cluster_id === cluster.id && r.vars.mode === mode));
      await waitFor(async () => (await textLog(users[0]!.key, queued.body.id)).includes('never finishing'));
      const canceled = await owner('POST', `/runs/${queued.body.id}/cancel`);
      expect(canceled.status).toBe(200);
      expect(canceled.body).toMatchObject({ state: 'CANCELED', failure: 'Canceled while it ran; the cluster may be partly changed.' });
      const pid = (await scratch.read()).find((r) => r.command === 'apply' && r.vars.mode === mode && r.vars.tollgate_cluster_id === cluster.id)!.pid;
      expect(alive(pid)).toBe(false);
      if (mode === 'hang') expect(await textLog(users[0]!.key, queued.body.id)).toContain('Interrupt received');
      expect((await owner('POST', `/runs/${queued.body.id}/cancel`)).status).toBe(409);
    }
  });

  it('the log is followed live as server-sent events, and ends with the run', async () => {
    const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
    const queued = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'slow', count: 10 } });
    const response = await fetch(`${gateway.url}/api/v1/runs/${queued.body.id}/log?follow=true`, { headers: { authorization: `Bearer ${users[0]!.key}` } });
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readSse(response);
    const logEvents = events.filter((event) => event.event === 'log');
    // Live: the pieces came one after another as the tool printed (10 lines, 100 ms apart), not as one at the end.
    expect(logEvents.length).toBeGreaterThan(3);
    expect(logEvents.map((event) => Number(event.id))).toEqual(logEvents.map((_, index) => index));
    const followed = logEvents.map((event) => event.data).join('\n');
    for (let i = 1; i <= 10; i++) expect(followed).toContain(`fake: step ${i} of 10`);
    expect(events.at(-1)).toEqual({ event: 'end', data: JSON.stringify({ state: 'APPLIED' }) });
    // Following an ended run gives the whole log and the end at once.
    const again = await readSse(await fetch(`${gateway.url}/api/v1/runs/${queued.body.id}/log?follow=true`, { headers: { authorization: `Bearer ${users[0]!.key}` } }));
    expect(again.filter((event) => event.event === 'log').map((event) => event.data).join('\n')).toBe(followed);
  });

  it('secrets are masked in the log: the cluster\'s private key and sensitive inputs', async () => {
    const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
    const run = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'leak', password: 'hunter2-very-secret' } })).body.id);
    expect(run.state).toBe('APPLIED');
    const log = await textLog(users[0]!.key, run.id);
    expect(log).toContain('the password is ********');
    expect(log).not.toContain('hunter2-very-secret');
    // The key was printed (its lines are there, masked), and none of its lines is left.
    expect(log).toMatch(/\*{8}\n(\*{8}\n)+/);
    expect(log).not.toContain('OPENSSH PRIVATE KEY');
    const keyBody = log.split('\n').filter((line) => /^[A-Za-z0-9+/=]{40,}$/.test(line.trim()));
    expect(keyBody).toEqual([]);
    expect(log).toContain('********');
  });

  it('a module with a web port gets a public URL, and requests for its host reach the node', async () => {
    const web = http.createServer((req, res) => res.end(`grafana says hi to ${req.url} via ${req.headers['x-forwarded-host']}`));
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    const port = (web.address() as { port: number }).port;
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway, { nodes: 1, addresses: ['127.0.0.1'] });
      const run = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'web', port } })).body.id);
      expect(run).toMatchObject({ state: 'APPLIED', public_url: `https://${stackName}.${cluster.public_domain}`, outputs: { web_port: port } });
      const host = `${stackName}.${cluster.public_domain}`;
      // fetch cannot set Host: node:http can, as a browser reaching the public URL through a TLS terminator would.
      await waitFor(async () => (await getWithHost(`${gateway.url}/dashboards?x=1`, host)).status === 200);
      expect(await getWithHost(`${gateway.url}/dashboards?x=1`, host)).toEqual({ status: 200, body: `grafana says hi to /dashboards?x=1 via ${host}` });
      expect((await getWithHost(`${gateway.url}/dashboards`, `other.${cluster.public_domain}`)).status).toBe(404);
      // A TLS terminator asks before getting a certificate for a name: yes for this one, no for others.
      expect((await fetch(`${gateway.url}/tls/allowed?domain=${host}`)).status).toBe(200);
      expect((await fetch(`${gateway.url}/tls/allowed?domain=other.${cluster.public_domain}`)).status).toBe(404);
      // Any other host is the gateway itself.
      expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
    } finally {
      web.close();
    }
  });

  it('a manifest\'s web_port gives each run a public URL too', async () => {
    const { owner, users, cluster } = await orgWithCluster(gateway, { nodes: 1 });
    const name = `web-${Math.random().toString(36).slice(2, 8)}`;
    const form = new FormData();
    const zip = await zipOf({ 'manifest.json': JSON.stringify({ name, title: 'Web', web_port: 8443, inputs: [{ name: 'name', type: 'string', default: 'x' }] }), 'main.tf': FAKE_MODULE });
    form.set('package', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'web.zip');
    expect((await fetch(`${gateway.url}/api/v1/stacks`, { method: 'POST', headers: { authorization: `Bearer ${users[0]!.key}` }, body: form })).status).toBe(201);
    const run = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: name })).body.id);
    expect(run).toMatchObject({ state: 'APPLIED', public_url: `https://${name}.${cluster.public_domain}` });
  });

  it('organizations see and apply to their own clusters only', async () => {
    const { owner, cluster, stackName } = await orgWithCluster(gateway);
    const run = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
    const { users } = await orgWithUsers(gateway, ['owner']);
    const stranger = apiAs(gateway, users[0]!.key);
    expect((await stranger('GET', `/runs/${run.body.id}`)).status).toBe(404);
    expect((await stranger('GET', `/runs/${run.body.id}/log`)).status).toBe(404);
    expect((await stranger('POST', `/runs/${run.body.id}/cancel`)).status).toBe(404);
    expect((await stranger('GET', `/clusters/${cluster.id}/runs`)).status).toBe(404);
    expect((await stranger('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } })).status).toBe(404);
    expect((await runEnded(owner, run.body.id)).state).toBe('APPLIED');
    const listed = await owner('GET', `/clusters/${cluster.id}/runs`);
    expect(listed.body).toMatchObject({ data: [{ id: run.body.id }], pagination: { total: 1 } });
    expect((await stranger('GET', `/runs/${run.body.id}`, undefined)).status).toBe(404);
    expect((await apiAs(gateway, 'sk-gw-nope')('GET', `/runs/${run.body.id}`)).status).toBe(401);
  });

  async function textLog(key: string, runId: string): Promise<string> {
    const response = await fetch(`${gateway.url}/api/v1/runs/${runId}/log`, { headers: { authorization: `Bearer ${key}` } });
    return response.text();
  }
});

describe('runs: timeouts, queued cancels, and no tool', () => {
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  beforeAll(async () => {
    scratch = await runScratch();
  });
  afterAll(() => scratch?.remove());

  it('a run past TOLLGATE_RUN_TIMEOUT_SECONDS is stopped and FAILED', async () => {
    const gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10', ...scratch.env, TOLLGATE_RUN_TIMEOUT_SECONDS: '1' });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'hang' } })).body.id);
      expect(run).toMatchObject({ state: 'FAILED', failure: 'It ran longer than 1 s and was stopped; the cluster may be partly changed.' });
      expect(Date.parse(run.finished_at) - Date.parse(run.started_at)).toBeGreaterThanOrEqual(1000);
    } finally {
      await gateway.close();
    }
  });

  it('with no worker here a run stays QUEUED, and canceling it ends it at once', async () => {
    const gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10', ...scratch.env, TOLLGATE_RUN_WORKERS: '0' });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const queued = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await owner('GET', `/runs/${queued.body.id}`)).body.state).toBe('QUEUED');
      const canceled = await owner('POST', `/runs/${queued.body.id}/cancel`);
      expect(canceled.body).toMatchObject({ state: 'CANCELED', failure: 'Canceled before it started.', started_at: null });
    } finally {
      await gateway.close();
    }
  });

  it('without OpenTofu or Terraform, applying answers 503 naming the setting, and nothing is queued', async () => {
    const gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10', ...scratch.env, TOLLGATE_TOFU_BIN: path.join(scratch.workDir, 'no-such-tofu') });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const refused = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('TOLLGATE_TOFU_BIN') });
      expect((await owner('GET', `/clusters/${cluster.id}/runs`)).body.pagination.total).toBe(0);
    } finally {
      await gateway.close();
    }
  });

  it('leaves no work folder behind', async () => {
    expect(existsSync(scratch.workDir) ? await readdir(scratch.workDir) : []).toEqual([]);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { host } }, (response) => {
        let body = '';
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
