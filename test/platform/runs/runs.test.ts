import path from 'node:path';
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiAs, orgWithUsers } from '../../surfaces/api/harness.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { skippedWithout } from '../../helpers/skips.js';
import { zipOf } from '../../helpers/zip.js';
import { FAKE_MODULE, orgWithCluster, runCases, runEnded, runScratch } from './harness.js';

/**
 * Runs applied through the tool: what the tool is given and runs, the state kept between runs (the
 * stack's, not its name's), the inputs checked, a failing tool, and who sees which runs. The
 * cancels and the log are runs-cancel-and-log.test.ts's, public URLs runs-web.test.ts's, the bounds
 * runs-bounds.test.ts's. Each sandbox and each store here, paired (`runCases`).
 */
const cases = await runCases();
skippedWithout(
  cases.length === 0
    ? 'runs: stacks applied to clusters through the tool: no run sandbox here (bubblewrap, or a Docker engine; see the line above)'
    : null,
);

describe.each(cases)(
  'runs: stacks applied to clusters through the tool ($store, $kind.name sandbox)',
  ({ kind, store }) => {
    let gateway: TestGateway;
    let scratch: Awaited<ReturnType<typeof runScratch>>;

    beforeAll(async () => {
      scratch = await runScratch();
      gateway = await startTestGateway(store, { TOLLGATE_PASSWORD_COST: '10', ...scratch.env, ...kind.env });
    });
    afterAll(async () => {
      await gateway?.close();
      await scratch?.remove();
    });

    it('applies: init, apply and output in a fresh folder with the inputs, the platform variables and the key file; APPLIED with outputs', async () => {
      // A global stack (its owner is a platform admin): any member of the organization may apply
      // it.
      const { member, users, cluster, stackName } = await orgWithCluster(gateway, { globalStack: true });
      const queued = await member('POST', `/clusters/${cluster.id}/runs`, {
        stack: stackName,
        inputs: { name: 'first', count: 3 },
      });
      expect(queued.status).toBe(201);
      expect(queued.body).toMatchObject({
        cluster_id: cluster.id,
        stack: stackName,
        target: null,
        state: 'QUEUED',
        inputs: { name: 'first', count: 3, mode: 'ok', port: 0, password: '' },
      });
      const run = await runEnded(member, queued.body.id);
      expect(run).toMatchObject({
        state: 'APPLIED',
        exit_code: 0,
        failure: null,
        public_url: null,
        outputs: { greeting: `hello ${cluster.id}`, token: null },
      });
      expect(Date.parse(run.finished_at)).toBeGreaterThanOrEqual(Date.parse(run.started_at));

      const calls = (await scratch.read()).filter((record) => record.vars.tollgate_cluster_id === cluster.id);
      expect(calls.map((call) => [call.command, ...call.args])).toEqual([
        ['init', '-input=false', '-no-color'],
        ['apply', '-auto-approve', '-input=false', '-no-color'],
        ['output', '-json', '-no-color'],
      ]);
      const apply = calls[1]!;
      // The tool sees its own folder at /workspace (the sandbox), nothing of the host's paths.
      expect(apply.cwd).toBe('/workspace/module');
      // The inputs, and the platform variables the module declares (not those it does not:
      // tollgate_public_domain).
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
      // The tool's environment is the allow-list, what TOLLGATE_RUN_ENV passes and the sandbox's
      // own: none of the gateway's settings.
      expect(Object.keys(apply.env).sort()).toEqual([
        'CHECKPOINT_DISABLE',
        'FAKE_TOFU_RECORDS',
        'HOME',
        'HTTPS_PROXY',
        'HTTP_PROXY',
        'LANG',
        'NO_PROXY',
        'PATH',
        'PWD',
        'TF_INPUT',
        'TF_IN_AUTOMATION',
        'TMPDIR',
        'USER',
        'http_proxy',
        'https_proxy',
      ]);
      expect(apply.env).toMatchObject({
        TF_IN_AUTOMATION: '1',
        TF_INPUT: '0',
        HOME: '/workspace/home',
        HTTPS_PROXY: 'http://127.0.0.1:3128',
      });
      // The run's folder, key file included, is gone.
      expect((await readdir(scratch.workDir)).filter((name) => name.startsWith(`${run.id}-`))).toEqual([]);

      const log = await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, {
        headers: { authorization: `Bearer ${users[1]!.key}` },
      });
      expect(log.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await log.text();
      expect(text).toContain(`[tollgate] Applying stack ${stackName} to cluster lab`);
      expect(text).toContain('fake: step 3 of 3');
      expect(text).toContain('Apply complete!');
      expect(text.indexOf('Initializing the backend')).toBeLessThan(text.indexOf('fake: step 1'));
      // This gateway reads the run's cgroup (docker: the container's), so every bound is enforced:
      // no warning (see docker-blind.test.ts).
      expect(text).not.toContain('Warning:');
    });

    it('targets one node; keeps the state between runs; refuses a node of another cluster', async () => {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const node = cluster.nodes[1]!;
      const first = await owner('POST', `/clusters/${cluster.id}/runs`, {
        stack: stackName,
        target: { node_id: node.id },
        inputs: { name: 'a' },
      });
      expect(first.body.target).toEqual({ node_id: node.id });
      expect((await runEnded(owner, first.body.id)).state).toBe('APPLIED');
      const second = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'b' } });
      expect((await runEnded(owner, second.body.id)).state).toBe('APPLIED');
      const applies = (await scratch.read()).filter(
        (r) => r.command === 'apply' && r.vars.tollgate_cluster_id === cluster.id,
      );
      expect(applies.map((r) => [r.vars.tollgate_target_node, r.stateSerial])).toEqual([
        [node.address, null],
        ['', 1],
      ]);
      const other = await orgWithCluster(gateway);
      const refused = await owner('POST', `/clusters/${cluster.id}/runs`, {
        stack: stackName,
        target: { node_id: other.cluster.nodes[0]!.id },
        inputs: { name: 'c' },
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error.details).toEqual([{ field: 'target.node_id', message: 'Not a node of this cluster.' }]);
    });

    it("a stack added again under a deleted stack's name starts with no state: the state is the stack's, not its name's", async () => {
      const { owner, member, users, cluster, stackName } = await orgWithCluster(gateway);
      const first = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'a' } });
      expect((await runEnded(owner, first.body.id)).state).toBe('APPLIED');
      expect((await owner('DELETE', `/stacks/${stackName}`)).status).toBe(204);
      // Another member of the organization adds a stack of that name, and applies it to the same
      // cluster.
      const form = new FormData();
      form.set(
        'package',
        new Blob([new Uint8Array(await zipOf({ [`${stackName}/main.tf`]: FAKE_MODULE }))], { type: 'application/zip' }),
        `${stackName}.zip`,
      );
      expect(
        (
          await fetch(`${gateway.url}/api/v1/stacks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${users[1]!.key}` },
            body: form,
          })
        ).status,
      ).toBe(201);
      const second = await member('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'b' } });
      expect((await runEnded(member, second.body.id)).state).toBe('APPLIED');
      const third = await member('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'c' } });
      expect((await runEnded(member, third.body.id)).state).toBe('APPLIED');
      const applies = (await scratch.read()).filter(
        (r) => r.command === 'apply' && r.vars.tollgate_cluster_id === cluster.id,
      );
      // The new stack's first run restores nothing; its second restores its own state.
      expect(applies.map((r) => [r.vars.name, r.stateSerial])).toEqual([
        ['a', null],
        ['b', null],
        ['c', 1],
      ]);
    });

    it('two organizations with private stacks of one name each apply their own', async () => {
      const stackName = `same-${Math.random().toString(36).slice(2, 8)}`;
      const first = await orgWithCluster(gateway, { stackName });
      const second = await orgWithCluster(gateway, { stackName });
      for (const { owner, cluster } of [first, second]) {
        const queued = await owner('POST', `/clusters/${cluster.id}/runs`, {
          stack: stackName,
          inputs: { name: cluster.id },
        });
        expect(queued.status).toBe(201);
        expect(await runEnded(owner, queued.body.id)).toMatchObject({
          state: 'APPLIED',
          stack: stackName,
          public_url: null,
        });
      }
      const applies = (await scratch.read()).filter(
        (r) =>
          r.command === 'apply' && [first.cluster.id, second.cluster.id].includes(r.vars.tollgate_cluster_id as string),
      );
      expect(applies.map((r) => [r.vars.tollgate_cluster_id, r.vars.name])).toEqual(
        [first.cluster.id, second.cluster.id].map((id) => [id, id]),
      );
    });

    it('checks the inputs against the declarations, all errors at once, and the profile against applicable_profiles; nothing is queued', async () => {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const bad = await owner('POST', `/clusters/${cluster.id}/runs`, {
        stack: stackName,
        inputs: { count: 'three', colour: 'red', mode: 7 },
      });
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
      expect((await owner('POST', `/clusters/${cluster.id}/runs`, { stack: 'no-such-stack', inputs: {} })).status).toBe(
        404,
      );
    });

    it('a failing tool ends the run FAILED with its exit status and its error in the log', async () => {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const failed = await runEnded(
        owner,
        (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'fail' } }))
          .body.id,
      );
      expect(failed).toMatchObject({
        state: 'FAILED',
        exit_code: 2,
        failure: `fake-tofu.mjs apply exited with 2.`,
        outputs: null,
      });
      const initFailed = await runEnded(
        owner,
        (
          await owner('POST', `/clusters/${cluster.id}/runs`, {
            stack: stackName,
            inputs: { name: 'x', mode: 'init-fails' },
          })
        ).body.id,
      );
      expect(initFailed).toMatchObject({ state: 'FAILED', exit_code: 1, failure: 'fake-tofu.mjs init exited with 1.' });
      const log = await textLog(users[0]!.key, failed.id);
      expect(log).toContain('Error: the fake provider refused');
      expect(log).toContain('[tollgate] FAILED: fake-tofu.mjs apply exited with 2.');
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
      expect(
        (await stranger('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } })).status,
      ).toBe(404);
      expect((await runEnded(owner, run.body.id)).state).toBe('APPLIED');
      const listed = await owner('GET', `/clusters/${cluster.id}/runs`);
      expect(listed.body).toMatchObject({ data: [{ id: run.body.id }], pagination: { total: 1 } });
      expect((await stranger('GET', `/runs/${run.body.id}`, undefined)).status).toBe(404);
      expect((await apiAs(gateway, 'sk-gw-nope')('GET', `/runs/${run.body.id}`)).status).toBe(401);
    });

    async function textLog(key: string, runId: string): Promise<string> {
      const response = await fetch(`${gateway.url}/api/v1/runs/${runId}/log`, {
        headers: { authorization: `Bearer ${key}` },
      });
      return response.text();
    }
  },
);
