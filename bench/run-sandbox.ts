import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Docker from 'dockerode';
import yazl from 'yazl';
import { loadConfig } from '../src/config/index.js';
import { startGateway, type RunningGateway } from '../src/server/start.js';
import { createLogger } from '../src/shared/http/log.js';
import { findTool } from '../src/platform/runs/tool.js';
import { buildRunnerImage } from '../test/helpers/runner-image.js';

/**
 * `npm run bench:sandbox`: the time the run sandbox adds to a run. One
 * gateway per kind (none, bubblewrap, and docker when an engine answers at
 * /var/run/docker.sock: its runner image is built locally as the tests build
 * it) applies the same small module (one `terraform_data`, two outputs) with
 * the real tool, in turn, `--runs` times each; the report is each one's
 * median from RUNNING to its end (the run's own `started_at` to
 * `finished_at`: init, apply and output, and the sandbox around them) and
 * what each sandbox adds to none. Needs `tofu` or `terraform` on PATH and a
 * machine where bubblewrap works (root, or a delegated cgroup). A report,
 * never a pass/fail test.
 */

const { values } = parseArgs({ options: { runs: { type: 'string', default: '10' } } });
const runs = Number(values.runs);
const OPERATOR = 'bench-operator-token-0123456789';
const MODULE = `
variable "tollgate_cluster_id" { type = string }
resource "terraform_data" "marker" {
  input = "hello \${var.tollgate_cluster_id}"
  triggers_replace = [timestamp()]
}
output "message" { value = terraform_data.marker.output }
output "web_port" { value = 8088 }
`;

interface Bench {
  gateway: RunningGateway;
  call(method: string, route: string, body?: unknown, key?: string): Promise<any>;
  key: string;
  clusterId: string;
}

async function setUp(sandbox: string, workDir: string, env: Record<string, string> = {}): Promise<Bench> {
  const gateway = await startGateway(
    loadConfig({
      ...process.env,
      PORT: '0',
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_DATA_DIR: 'memory://',
      TOLLGATE_SEED_DEMO: 'false',
      TOLLGATE_ADMIN_TOKEN: OPERATOR,
      TOLLGATE_PASSWORD_COST: '10',
      TOLLGATE_RUN_DIR: workDir,
      TOLLGATE_RUN_POLL_MS: '50',
      TOLLGATE_RUN_SANDBOX: sandbox,
      ...env,
    }),
    { log: createLogger('silent') },
  );
  const call = async (method: string, route: string, body?: unknown, key = OPERATOR) => {
    const response = await fetch(`${gateway.url}${route}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await response.json()) as any;
    if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${JSON.stringify(json)}`);
    return json;
  };
  const org = await call('POST', '/admin/v1/orgs', { name: `bench ${sandbox}` });
  const user = await call('POST', `/admin/v1/orgs/${org.id}/users`, {
    name: 'Bench',
    email: `bench-${sandbox}@example.com`,
    password: 'correct horse battery',
    role: 'owner',
  });
  const { secret: key } = await call('POST', `/admin/v1/orgs/${org.id}/keys`, { name: 'bench', user_id: user.id });
  const profile = `bench-${sandbox}`;
  await call('POST', '/admin/v1/profiles', { name: profile, gpus_per_node: 1 });
  await call('POST', '/admin/v1/nodes', { profile, address: `${profile}-n0.internal` });
  const cluster = await call(
    'POST',
    '/api/v1/clusters',
    { name: 'bench', profile, nodes: 1, public_domain: `${profile}.example.test` },
    key,
  );
  const form = new FormData();
  form.set(
    'package',
    new Blob([new Uint8Array(await zipOf({ 'bench-marker/main.tf': MODULE }))], { type: 'application/zip' }),
    'bench-marker.zip',
  );
  const added = await fetch(`${gateway.url}/api/v1/stacks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  if (added.status !== 201) throw new Error(`adding the stack: ${added.status} ${await added.text()}`);
  return { gateway, call, key, clusterId: cluster.id };
}

/** One run, start to end; its duration in ms from the run's own timestamps. */
async function oneRun(bench: Bench): Promise<number> {
  const queued = await bench.call(
    'POST',
    `/api/v1/clusters/${bench.clusterId}/runs`,
    { stack: 'bench-marker', inputs: {} },
    bench.key,
  );
  for (;;) {
    const run = await bench.call('GET', `/api/v1/runs/${queued.id}`, undefined, bench.key);
    if (run.state === 'APPLIED') return Date.parse(run.finished_at) - Date.parse(run.started_at);
    if (run.state === 'FAILED' || run.state === 'CANCELED')
      throw new Error(`run ${run.id} ${run.state}: ${run.failure}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function zipOf(files: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, text] of Object.entries(files)) zip.addBuffer(Buffer.from(text), name);
  zip.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    zip.outputStream.on('data', (chunk: Buffer) => chunks.push(chunk));
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on('error', reject);
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

const tool = findTool({ pathList: process.env.PATH });
if (!tool) throw new Error('bench:sandbox needs tofu or terraform on PATH');
const workDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-bench-runs-'));
await chmod(workDir, 0o755);
const benches: Array<{ kind: string; bench: Bench }> = [
  { kind: 'none', bench: await setUp('none', path.join(workDir, 'none')) },
  { kind: 'bubblewrap', bench: await setUp('bubblewrap', path.join(workDir, 'bubblewrap')) },
];
if (
  await new Docker({ socketPath: '/var/run/docker.sock', timeout: 3000 }).ping().then(
    () => true,
    () => false,
  )
) {
  const image = await buildRunnerImage(path.resolve(import.meta.dirname, '../test/platform/runs/fake-tofu.mjs'));
  benches.push({
    kind: 'docker',
    bench: await setUp('docker', path.join(workDir, 'docker'), { TOLLGATE_RUN_IMAGE: image }),
  });
} else console.log('(no Docker engine at /var/run/docker.sock: the docker kind is not measured)');
try {
  // One of each first, unmeasured: the tool's first start reads its binary from disk.
  for (const { bench } of benches) await oneRun(bench);
  const times = new Map<string, number[]>(benches.map(({ kind }) => [kind, []]));
  for (let i = 0; i < runs; i++) for (const { kind, bench } of benches) times.get(kind)!.push(await oneRun(bench));
  const bare = median(times.get('none')!);
  console.log(
    `${path.basename(tool)}: a run of one terraform_data (init, apply, output), median of ${runs}, RUNNING to APPLIED`,
  );
  for (const [kind, values] of times) {
    const value = median(values);
    const added =
      kind === 'none' ? '' : `   adds ${(value - bare).toFixed(0)} ms (${((value / bare - 1) * 100).toFixed(0)} %)`;
    console.log(`  ${`sandbox ${kind}`.padEnd(20)}${value.toFixed(0).padStart(6)} ms${added}   (${values.join(', ')})`);
  }
} finally {
  for (const { bench } of benches) await bench.gateway.close();
  await rm(workDir, { recursive: true, force: true });
}
