import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orgWithUsers } from '../api/harness.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';
import { zipOf } from '../../helpers/zip.js';
import { FAKE_MODULE, OPERATOR, runScratch, sandboxAvailable } from '../../platform/runs/harness.js';
import { tollgate } from './harness.js';

const sandboxed = await sandboxAvailable();

describe.skipIf(!sandboxed)('tollgate CLI: profiles, nodes, clusters and runs', () => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  let key: string;

  beforeAll(async () => {
    scratch = await runScratch();
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10', ...scratch.env });
    key = (await orgWithUsers(gateway, ['owner'])).users[0]!.key;
    const form = new FormData();
    form.set(
      'package',
      new Blob([new Uint8Array(await zipOf({ 'cli-fake/main.tf': FAKE_MODULE }))], { type: 'application/zip' }),
      'cli-fake.zip',
    );
    expect(
      (
        await fetch(`${gateway.url}/api/v1/stacks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: form,
        })
      ).status,
    ).toBe(201);
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
  });

  const asOperator = (args: string[]) => tollgate(args, { TOLLGATE_URL: gateway.url, TOLLGATE_ADMIN_TOKEN: OPERATOR });
  const asUser = (args: string[]) => tollgate(args, { TOLLGATE_URL: gateway.url, TOLLGATE_API_KEY: key });

  // About twenty CLI processes, each a node start: 60 s, since on a loaded machine they took longer
  // than the default 30.
  it('an operator registers a profile and nodes; a user creates a cluster, applies a stack, reads the run and its log, and deletes the cluster', async () => {
    expect((await asOperator(['profiles', 'add', '--name', 'l4x2', '--gpus', '2', '--gpu-model', 'L4'])).stdout).toBe(
      'Added profile l4x2: 2 GPUs per node (L4).\n',
    );
    for (const address of ['10.9.0.1', '10.9.0.2'])
      expect((await asOperator(['nodes', 'add', '--profile', 'l4x2', '--address', address])).code).toBe(0);
    expect((await asOperator(['profiles', 'list'])).stdout).toMatch(/^NAME\s+GPUS\/NODE\s+GPU MODEL.*\nl4x2\s+2\s+L4/);
    expect(
      (await asOperator(['nodes', 'list', '--json'])).json.data.map((n: { address: string; cluster_id: null }) => [
        n.address,
        n.cluster_id,
      ]),
    ).toEqual([
      ['10.9.0.1', null],
      ['10.9.0.2', null],
    ]);

    const cluster = await asUser([
      'clusters',
      'create',
      '--name',
      'lab',
      '--profile',
      'l4x2',
      '--nodes',
      '2',
      '--domain',
      'lab.example.test',
      '--json',
    ]);
    expect(cluster).toMatchObject({ code: 0, json: { name: 'lab', profile: 'l4x2', state: 'running' } });
    const id: string = cluster.json.id;
    expect((await asUser(['clusters', 'list'])).stdout).toContain(`${id}  lab`);
    expect((await asUser(['clusters', 'get', id])).stdout).toMatch(
      /status:\s+ready\n[\s\S]*nodes:\s+node_\S+ \(10\.9\.0\.1, key unmanaged\), node_\S+ \(10\.9\.0\.2, key unmanaged\)/,
    );

    const bad = await asUser(['runs', 'apply', id, '--stack', 'cli-fake', '--inputs', '{"count": "many"}']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('inputs.count: Must be a number.');
    expect(bad.stderr).toContain('inputs.name: Required.');
    expect((await asUser(['runs', 'apply', id, '--stack', 'cli-fake', '--inputs', '[1]'])).code).toBe(2);

    const applied = await asUser([
      'runs',
      'apply',
      id,
      '--stack',
      'cli-fake',
      '--node',
      cluster.json.nodes[0].id,
      '--inputs',
      '{"name": "cli", "count": 4}',
    ]);
    expect(applied.stdout).toMatch(
      /^Queued run (run_\S+): cli-fake on node node_\S+\. Follow it with: tollgate runs log run_\S+\n$/,
    );
    const runId = /Queued run (run_\S+):/.exec(applied.stdout)![1]!;
    let run: any;
    await until(
      `run ${runId} has ended`,
      async () => {
        run = (await asUser(['runs', 'get', runId, '--json'])).json;
        return run.state === 'APPLIED' || run.state === 'FAILED';
      },
      { timeout: 20_000, detail: () => run },
    );
    expect(run.state).toBe('APPLIED');
    expect((await asUser(['runs', 'list', id])).stdout).toMatch(new RegExp(`${runId}\\s+cli-fake\\s+APPLIED`));
    expect((await asUser(['runs', 'get', runId])).stdout).toMatch(/state:\s+APPLIED/);
    expect((await asUser(['runs', 'log', runId])).stdout).toContain('fake: step 4 of 4');
    expect((await asUser(['runs', 'cancel', runId])).stderr).toContain('has ended already (APPLIED)');

    expect((await asUser(['clusters', 'delete', id])).stdout).toBe(`Deleted cluster ${id}.\n`);
    expect(
      (await asOperator(['nodes', 'list', '--json'])).json.data.every(
        (n: { cluster_id: null }) => n.cluster_id === null,
      ),
    ).toBe(true);
  }, 60_000);
});
