import { existsSync } from 'node:fs';
import http from 'node:http';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiAs, orgWithUsers } from '../../surfaces/api/harness.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { readSse } from '../../helpers/sse.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';
import { zipOf } from '../../helpers/zip.js';
import {
  FAKE_MODULE,
  getWithHost,
  orgWithCluster,
  profileWithNodes,
  runEnded,
  runSandboxExists,
  runScratch,
  sandboxKinds,
} from './harness.js';

const kinds = await sandboxKinds();
const stores = kinds.length > 0 ? await availableStores() : [];
const cases = kinds.flatMap((kind) => stores.map((store) => ({ kind, store })));
skippedWithout(
  kinds.length === 0 ? 'runs: no run sandbox here (bubblewrap, or a Docker engine; see the line above)' : null,
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

    it('one active run per cluster and stack (409); another stack or cluster goes ahead; the next run once it ended', async () => {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const hanging = await owner('POST', `/clusters/${cluster.id}/runs`, {
        stack: stackName,
        inputs: { name: 'x', mode: 'hang' },
      });
      const second = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'y' } });
      expect(second.status).toBe(409);
      expect(second.body.error).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(hanging.body.id) });
      const other = await orgWithCluster(gateway, { stackName: `${stackName}-b` });
      expect(
        (
          await other.owner('POST', `/clusters/${other.cluster.id}/runs`, {
            stack: other.stackName,
            inputs: { name: 'z' },
          })
        ).status,
      ).toBe(201);
      expect((await owner('POST', `/runs/${hanging.body.id}/cancel`)).status).toBe(200);
      const third = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'y' } });
      expect(third.status).toBe(201);
      expect((await runEnded(owner, third.body.id)).state).toBe('APPLIED');
    });

    it('cancel signals the tool and waits for it: CANCELED, the process gone, even one that ignores SIGINT', async () => {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      for (const mode of ['hang', 'hang-hard']) {
        const queued = await owner('POST', `/clusters/${cluster.id}/runs`, {
          stack: stackName,
          inputs: { name: 'x', mode },
        });
        await until(`the ${mode} apply has started`, async () =>
          (await scratch.read()).some(
            (r) => r.command === 'apply' && r.vars.tollgate_cluster_id === cluster.id && r.vars.mode === mode,
          ),
        );
        await until('the run logs that it never finishes', async () =>
          (await textLog(users[0]!.key, queued.body.id)).includes('never finishing'),
        );
        expect(await runSandboxExists(kind.name, queued.body.id)).toBe(true);
        const canceled = await owner('POST', `/runs/${queued.body.id}/cancel`);
        expect(canceled.status).toBe(200);
        expect(canceled.body).toMatchObject({
          state: 'CANCELED',
          failure: 'Canceled while it ran; the cluster may be partly changed.',
        });
        // Every process of the run is gone: its cgroup is removed only once it is empty; its
        // container is removed.
        expect(await runSandboxExists(kind.name, queued.body.id)).toBe(false);
        if (mode === 'hang') expect(await textLog(users[0]!.key, queued.body.id)).toContain('Interrupt received');
        expect((await owner('POST', `/runs/${queued.body.id}/cancel`)).status).toBe(409);
      }
    });

    it('the log is followed live as server-sent events, and ends with the run', async () => {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const queued = await owner('POST', `/clusters/${cluster.id}/runs`, {
        stack: stackName,
        inputs: { name: 'x', mode: 'slow', count: 10 },
      });
      const response = await fetch(`${gateway.url}/api/v1/runs/${queued.body.id}/log?follow=true`, {
        headers: { authorization: `Bearer ${users[0]!.key}` },
      });
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = await readSse(response);
      const logEvents = events.filter((event) => event.event === 'log');
      // Live: the pieces came one after another as the tool printed (10 lines, 100 ms apart), not
      // as one at the end.
      expect(logEvents.length).toBeGreaterThan(3);
      expect(logEvents.map((event) => Number(event.id))).toEqual(logEvents.map((_, index) => index));
      const followed = logEvents.map((event) => event.data).join('\n');
      for (let i = 1; i <= 10; i++) expect(followed).toContain(`fake: step ${i} of 10`);
      expect(events.at(-1)).toEqual({ event: 'end', data: JSON.stringify({ state: 'APPLIED' }) });
      // Following an ended run gives the whole log and the end at once.
      const again = await readSse(
        await fetch(`${gateway.url}/api/v1/runs/${queued.body.id}/log?follow=true`, {
          headers: { authorization: `Bearer ${users[0]!.key}` },
        }),
      );
      expect(
        again
          .filter((event) => event.event === 'log')
          .map((event) => event.data)
          .join('\n'),
      ).toBe(followed);
    });

    it("secrets are masked in the log: the cluster's private key and sensitive inputs", async () => {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (
          await owner('POST', `/clusters/${cluster.id}/runs`, {
            stack: stackName,
            inputs: { name: 'x', mode: 'leak', password: 'hunter2-very-secret' },
          })
        ).body.id,
      );
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

    it('masks a short sensitive input too (five characters), in the stored log', async () => {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (
          await owner('POST', `/clusters/${cluster.id}/runs`, {
            stack: stackName,
            inputs: { name: 'x', mode: 'leak', password: 'q7v9k' },
          })
        ).body.id,
      );
      expect(run.state).toBe('APPLIED');
      const log = await textLog(users[0]!.key, run.id);
      expect(log).toContain('the password is ********\n');
      expect(log).not.toContain('q7v9k');
    });

    it('a module with a web port gets a public URL, and requests for its host reach the node', async () => {
      const web = http.createServer((req, res) =>
        res.end(`grafana says hi to ${req.url} via ${String(req.headers['x-forwarded-host'])}`),
      );
      await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
      const port = (web.address() as { port: number }).port;
      try {
        const { owner, cluster, stackName } = await orgWithCluster(gateway, { nodes: 1, addresses: ['127.0.0.1'] });
        const run = await runEnded(
          owner,
          (
            await owner('POST', `/clusters/${cluster.id}/runs`, {
              stack: stackName,
              inputs: { name: 'x', mode: 'web', port },
            })
          ).body.id,
        );
        expect(run).toMatchObject({
          state: 'APPLIED',
          public_url: `https://${stackName}.${cluster.public_domain}`,
          outputs: { web_port: port },
        });
        const host = `${stackName}.${cluster.public_domain}`;
        // fetch cannot set Host: node:http can, as a browser reaching the public URL through a TLS
        // terminator would.
        await until(
          'the public host routes to the node',
          async () => (await getWithHost(`${gateway.url}/dashboards?x=1`, host)).status === 200,
        );
        expect(await getWithHost(`${gateway.url}/dashboards?x=1`, host)).toEqual({
          status: 200,
          body: `grafana says hi to /dashboards?x=1 via ${host}`,
        });
        expect((await getWithHost(`${gateway.url}/dashboards`, `other.${cluster.public_domain}`)).status).toBe(404);
        // A TLS terminator asks before getting a certificate for a name: yes for this one, no for
        // others.
        expect((await fetch(`${gateway.url}/tls/allowed?domain=${host}`)).status).toBe(200);
        expect((await fetch(`${gateway.url}/tls/allowed?domain=other.${cluster.public_domain}`)).status).toBe(404);
        // Any other host is the gateway itself.
        expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
      } finally {
        web.close();
      }
    });

    it("a public domain belongs to one live cluster: another organization's claim is 409; a deleted cluster's host stops routing at once and is free again", async () => {
      const web = http.createServer((_req, res) => res.end('node says hi'));
      // Its own loopback address: node addresses are unique, and another test's node is 127.0.0.1.
      await new Promise<void>((resolve) => web.listen(0, '127.0.0.9', resolve));
      const port = (web.address() as { port: number }).port;
      try {
        const { owner, cluster, stackName } = await orgWithCluster(gateway, { nodes: 1, addresses: ['127.0.0.9'] });
        const run = await runEnded(
          owner,
          (
            await owner('POST', `/clusters/${cluster.id}/runs`, {
              stack: stackName,
              inputs: { name: 'x', mode: 'web', port },
            })
          ).body.id,
        );
        const host = `${stackName}.${cluster.public_domain}`;
        expect(run.public_url).toBe(`https://${host}`);
        await until(
          'the public host routes to the node',
          async () => (await getWithHost(`${gateway.url}/`, host)).status === 200,
        );

        // Another organization asks for the same domain (in capitals too): 409, said as it would be
        // for any taken name.
        const { users } = await orgWithUsers(gateway, ['owner']);
        const other = apiAs(gateway, users[0]!.key);
        const free = await profileWithNodes(gateway, 1);
        for (const domain of [cluster.public_domain, cluster.public_domain.toUpperCase()]) {
          const claimed = await other('POST', '/clusters', {
            name: 'thief',
            profile: free,
            nodes: 1,
            public_domain: domain,
          });
          expect(claimed.status).toBe(409);
          expect(claimed.body.error).toMatchObject({
            code: 'CONFLICT',
            message: `The public domain ${cluster.public_domain} is taken; choose another.`,
          });
        }

        expect((await owner('DELETE', `/clusters/${cluster.id}`)).status).toBe(204);
        // At once on this replica: the host is the gateway's own again, and no certificate is
        // allowed for it.
        expect((await getWithHost(`${gateway.url}/`, host)).body).not.toBe('node says hi');
        expect((await fetch(`${gateway.url}/tls/allowed?domain=${host}`)).status).toBe(404);
        // The domain is free again.
        expect(
          (
            await other('POST', '/clusters', {
              name: 'next',
              profile: free,
              nodes: 1,
              public_domain: cluster.public_domain,
            })
          ).status,
        ).toBe(201);
      } finally {
        web.close();
      }
    });

    it("a manifest's web_port gives each run a public URL too", async () => {
      const { owner, users, cluster } = await orgWithCluster(gateway, { nodes: 1 });
      const name = `web-${Math.random().toString(36).slice(2, 8)}`;
      const form = new FormData();
      const zip = await zipOf({
        'manifest.json': JSON.stringify({
          name,
          title: 'Web',
          web_port: 8443,
          inputs: [{ name: 'name', type: 'string', default: 'x' }],
        }),
        'main.tf': FAKE_MODULE,
      });
      form.set('package', new Blob([new Uint8Array(zip)], { type: 'application/zip' }), 'web.zip');
      expect(
        (
          await fetch(`${gateway.url}/api/v1/stacks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${users[0]!.key}` },
            body: form,
          })
        ).status,
      ).toBe(201);
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

describe.each(kinds)('runs: timeouts, queued cancels, and no tool ($name sandbox)', (kind) => {
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  beforeAll(async () => {
    scratch = await runScratch();
  });
  afterAll(() => scratch?.remove());

  it('a run past TOLLGATE_RUN_TIMEOUT_SECONDS is stopped and FAILED', async () => {
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_TIMEOUT_SECONDS: '1',
    });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'hang' } }))
          .body.id,
      );
      expect(run).toMatchObject({
        state: 'FAILED',
        failure: 'It ran longer than 1 s and was stopped; the cluster may be partly changed.',
      });
      expect(Date.parse(run.finished_at) - Date.parse(run.started_at)).toBeGreaterThanOrEqual(1000);
    } finally {
      await gateway.close();
    }
  });

  it('a busy loop past TOLLGATE_RUN_CPU_SECONDS is stopped and FAILED naming the bound', async () => {
    // The timeout is far off: only the CPU time check can stop a loop that never ends.
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_CPU_SECONDS: '2',
      TOLLGATE_RUN_TIMEOUT_SECONDS: '120',
    });
    try {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x', mode: 'spin' } }))
          .body.id,
        90_000,
      );
      expect(run).toMatchObject({
        state: 'FAILED',
        failure:
          'It went over its CPU time bound (2 s, TOLLGATE_RUN_CPU_SECONDS) and was stopped; the cluster may be partly changed.',
      });
      expect(
        await (
          await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, {
            headers: { authorization: `Bearer ${users[0]!.key}` },
          })
        ).text(),
      ).toContain('fake: spinning');
      // Stopped once over, not at the end of a minute's spinning.
      expect(Date.parse(run.finished_at) - Date.parse(run.started_at)).toBeLessThan(60_000);
    } finally {
      await gateway.close();
    }
  }, 120_000);

  it('a run that writes past TOLLGATE_RUN_DISK_MB in several smaller files is stopped by the periodic check and FAILED naming the bound', async () => {
    // 4 MiB files against a 16 MiB bound: no file reaches the per-file limit (RLIMIT_FSIZE); only
    // the check of the folder's total can stop the run, which would otherwise never end.
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_DISK_MB: '16',
      TOLLGATE_RUN_TIMEOUT_SECONDS: '120',
    });
    try {
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (
          await owner('POST', `/clusters/${cluster.id}/runs`, {
            stack: stackName,
            inputs: { name: 'x', mode: 'files', count: 40 },
          })
        ).body.id,
        90_000,
      );
      expect(run).toMatchObject({
        state: 'FAILED',
        failure:
          'It went over its disk bound (16 MiB written, TOLLGATE_RUN_DISK_MB) and was stopped; the cluster may be partly changed.',
      });
      const log = await (
        await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, {
          headers: { authorization: `Bearer ${users[0]!.key}` },
        })
      ).text();
      const written = [...log.matchAll(/fake: wrote file (\d+) of 40/g)].map((match) => Number(match[1]));
      // Four files make the bound; the check runs every 500 ms (five files), so it stops the writer
      // within a few more.
      expect(Math.max(...written)).toBeGreaterThanOrEqual(4);
      expect(Math.max(...written)).toBeLessThan(20);
      expect(log).not.toContain('all files written');
    } finally {
      await gateway.close();
    }
  }, 120_000);

  it('with no worker here a run stays QUEUED, and canceling it ends it at once', async () => {
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_RUN_WORKERS: '0',
    });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const queued = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
      // Queueing pokes this process's worker, which would claim the run in that pass. Stopping the
      // worker waits for any pass under way and ends a run it took (FAILED), so a run still QUEUED
      // after it was taken by no worker here.
      await gateway.services.runWorker.stop();
      expect((await owner('GET', `/runs/${queued.body.id}`)).body.state).toBe('QUEUED');
      const canceled = await owner('POST', `/runs/${queued.body.id}/cancel`);
      expect(canceled.body).toMatchObject({
        state: 'CANCELED',
        failure: 'Canceled before it started.',
        started_at: null,
      });
    } finally {
      await gateway.close();
    }
  });

  it('without OpenTofu or Terraform, applying answers 503 naming the setting, and nothing is queued', async () => {
    const gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...scratch.env,
      ...kind.env,
      TOLLGATE_TOFU_BIN: path.join(scratch.workDir, 'no-such-tofu'),
    });
    try {
      const { owner, cluster, stackName } = await orgWithCluster(gateway);
      const refused = await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } });
      expect(refused.status).toBe(503);
      expect(refused.body.error).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining('TOLLGATE_TOFU_BIN'),
      });
      expect((await owner('GET', `/clusters/${cluster.id}/runs`)).body.pagination.total).toBe(0);
    } finally {
      await gateway.close();
    }
  });

  it("TOLLGATE_RUN_SANDBOX=none runs unsandboxed only when set, warns at every start and says so in each run's log", async () => {
    const lines: string[] = [];
    const gateway = await startTestGateway(
      'pglite',
      {
        TOLLGATE_PASSWORD_COST: '10',
        ...scratch.env,
        TOLLGATE_RUN_SANDBOX: 'none',
        FAKE_TOFU_RECORDS: scratch.records,
      },
      { log: createLogger('warn', (line) => lines.push(line)) },
    );
    try {
      expect(
        lines.some((line) => JSON.parse(line).message.startsWith('TOLLGATE_RUN_SANDBOX=none: stacks run unsandboxed')),
      ).toBe(true);
      const { owner, users, cluster, stackName } = await orgWithCluster(gateway);
      const run = await runEnded(
        owner,
        (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: stackName, inputs: { name: 'x' } })).body.id,
      );
      expect(run.state).toBe('APPLIED');
      const log = await (
        await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, {
          headers: { authorization: `Bearer ${users[0]!.key}` },
        })
      ).text();
      expect(log).toContain('This run is not sandboxed (TOLLGATE_RUN_SANDBOX=none)');
      // The tool ran on the host: its folder is the host's.
      const apply = (await scratch.read()).find(
        (record) => record.command === 'apply' && record.vars.tollgate_cluster_id === cluster.id,
      )!;
      expect(apply.cwd.startsWith(scratch.workDir)).toBe(true);
    } finally {
      await gateway.close();
    }
  });

  it('leaves no work folder behind', async () => {
    expect(existsSync(scratch.workDir) ? await readdir(scratch.workDir) : []).toEqual([]);
  });
});
