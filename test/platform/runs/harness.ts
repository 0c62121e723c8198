import { existsSync } from 'node:fs';
import http from 'node:http';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { loadConfig } from '../../../src/config/index.js';
import { SandboxChooser } from '../../../src/platform/runs/sandbox/choose.js';
import { dockerAvailable, dockerSocket, testDocker } from '../../helpers/docker.js';
import { buildRunnerImage } from '../../helpers/runner-image.js';
import { requireServices } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { apiAs, orgWithUsers } from '../../surfaces/api/harness.js';
import { availableStores, type StoreKind, type TestGateway } from '../../helpers/gateway.js';
import { zipOf } from '../../helpers/zip.js';

export const OPERATOR = 'test-operator-token-0123456789';
export const FAKE_TOFU = path.resolve(import.meta.dirname, 'fake-tofu.mjs');

/** A module the stand-in `tofu` understands: its `mode` input says what it does (see fake-tofu.mjs). */
export const FAKE_MODULE = `
variable "mode" {
  type    = string
  default = "ok"
}
variable "count" {
  type    = number
  default = 2
}
variable "port" {
  type    = number
  default = 0
}
variable "password" {
  type      = string
  default   = ""
  sensitive = true
}
variable "name" {
  type        = string
  description = "Anything; required"
}
variable "tollgate_cluster_id" { type = string }
variable "tollgate_node_addresses" { type = list(string) }
variable "tollgate_target_node" { type = string }
variable "tollgate_ssh_private_key_file" { type = string }
`;

/** One JSON line per call of the stand-in tool. */
export interface ToolRecord {
  command: string;
  args: string[];
  cwd: string;
  pid: number;
  ppid: number;
  env: Record<string, string>;
  vars: Record<string, unknown>;
  keyFileMode: string | null;
  keyFileStart: string | null;
  keyFolder: string | null;
  stateSerial: number | null;
}

/**
 * Where the stand-in writes its records inside the sandbox (a folder of the test's, mounted there
 * by TOLLGATE_RUN_MOUNTS).
 */
const RECORDS_INSIDE = '/tollgate-test-records';

/**
 * A folder for the runs' work folders and the tool's records, removed by
 * `remove`. The stand-in tool is copied into it, and the folder is
 * traversable, because the sandbox's user must reach the tool (a checkout
 * may sit in a folder only root can enter); its records folder is mounted
 * into every run, writable, so the test can read what the tool saw.
 */
export async function runScratch(): Promise<{
  workDir: string;
  records: string;
  env: Record<string, string>;
  read(): Promise<ToolRecord[]>;
  remove(): Promise<void>;
}> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-runs-test-'));
  await chmod(folder, 0o755);
  const tool = path.join(folder, 'fake-tofu.mjs');
  await copyFile(FAKE_TOFU, tool);
  await chmod(tool, 0o755);
  const recordsDir = path.join(folder, 'records');
  await mkdir(recordsDir);
  await chmod(recordsDir, 0o777);
  const records = path.join(recordsDir, 'records.jsonl');
  const workDir = path.join(folder, 'work');
  return {
    workDir,
    records,
    env: {
      PATH: process.env.PATH ?? '',
      TOLLGATE_TOFU_BIN: tool,
      TOLLGATE_RUN_DIR: workDir,
      TOLLGATE_RUN_ENV: 'FAKE_TOFU_RECORDS',
      FAKE_TOFU_RECORDS: `${RECORDS_INSIDE}/records.jsonl`,
      TOLLGATE_RUN_MOUNTS: `${recordsDir}:${RECORDS_INSIDE}:rw`,
      TOLLGATE_RUN_POLL_MS: '50',
      TOLLGATE_RUN_KILL_GRACE_MS: '1000',
    },
    async read() {
      const text = await readFile(records, 'utf8').catch(() => '');
      return text
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as ToolRecord);
    },
    remove: () => rm(folder, { recursive: true, force: true }),
  };
}

/** An operator's call to /admin/v1. */
export async function operatorCall(
  gateway: { url: string },
  method: string,
  route: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${gateway.url}/admin/v1${route}`, {
    method,
    headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** A fresh hardware profile with `count` free nodes at 127.0.0.x addresses. */
export async function profileWithNodes(gateway: { url: string }, count: number, addresses?: string[]): Promise<string> {
  const name = `p-${Math.random().toString(36).slice(2, 8)}`;
  expect((await operatorCall(gateway, 'POST', '/profiles', { name, gpus_per_node: 2 })).status).toBe(201);
  for (let i = 0; i < count; i++)
    expect(
      (
        await operatorCall(gateway, 'POST', '/nodes', {
          profile: name,
          address: addresses?.[i] ?? `${name}-n${i}.internal`,
        })
      ).status,
    ).toBe(201);
  return name;
}

/**
 * An organization (owner, member) with a cluster of `nodes` nodes, and a `fake` stack: the owner's
 * private one, or a global one (the owner is then a platform admin).
 */
export async function orgWithCluster(
  gateway: TestGateway,
  options: { nodes?: number; addresses?: string[]; stackName?: string; globalStack?: boolean } = {},
) {
  const { orgId, users } = await orgWithUsers(gateway, ['owner', 'member'], { platformAdmin: options.globalStack });
  const owner = apiAs(gateway, users[0]!.key);
  const member = apiAs(gateway, users[1]!.key);
  const profile = await profileWithNodes(gateway, options.nodes ?? 2, options.addresses);
  const cluster = await owner('POST', '/clusters', {
    name: 'lab',
    profile,
    nodes: options.nodes ?? 2,
    public_domain: `${profile}.example.test`,
  });
  expect(cluster.status).toBe(201);
  const stackName = options.stackName ?? `fake-${Math.random().toString(36).slice(2, 8)}`;
  const form = new FormData();
  form.set(
    'package',
    new Blob([new Uint8Array(await zipOf({ [`${stackName}/main.tf`]: FAKE_MODULE }))], { type: 'application/zip' }),
    `${stackName}.zip`,
  );
  const added = await fetch(`${gateway.url}/api/v1/stacks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${users[0]!.key}` },
    body: form,
  });
  expect(added.status).toBe(201);
  return {
    orgId,
    users,
    owner,
    member,
    profile,
    cluster: cluster.body as { id: string; public_domain: string; nodes: Array<{ id: string; address: string }> },
    stackName,
  };
}

/**
 * Polls a run until it has ended and answers it; throws, with the run as last seen, after
 * `timeoutMs`.
 */
export async function runEnded(call: ReturnType<typeof apiAs>, runId: string, timeoutMs = 15_000): Promise<any> {
  let run: any;
  return until(
    `run ${runId} has ended`,
    async () => {
      run = (await call('GET', `/runs/${runId}`)).body;
      return ['APPLIED', 'FAILED', 'CANCELED'].includes(run.state) && run;
    },
    // Every 200 ms: a caller's 1,000 requests an hour would run out in under a minute at the
    // default 50.
    { timeout: timeoutMs, interval: 200, detail: () => run },
  );
}

/**
 * Whether the run's cgroup is still there (it is removed only once its last process is gone), on
 * cgroup v2 or v1.
 */
export function runCgroupExists(runId: string, parent = 'tollgate-runs'): boolean {
  return [`/sys/fs/cgroup/${parent}/run-${runId}`, `/sys/fs/cgroup/pids/${parent}/run-${runId}`].some((dir) =>
    existsSync(dir),
  );
}

let sandboxCheck: Promise<boolean> | undefined;

/**
 * True when runs can be sandboxed here (bubblewrap, socat and a cgroup the
 * tests may manage: root, as in CI). Otherwise skips with a line saying why,
 * or throws when REQUIRE_SERVICES=1.
 */
export function sandboxAvailable(): Promise<boolean> {
  sandboxCheck ??= (async () => {
    const scratch = await mkdtemp(path.join(tmpdir(), 'tollgate-sandbox-probe-'));
    await chmod(scratch, 0o755);
    try {
      const found = await new SandboxChooser(
        loadConfig({ PATH: process.env.PATH, TOLLGATE_RUN_DIR: scratch, TOLLGATE_RUN_SANDBOX: 'bubblewrap' }).runs,
      ).get();
      if (typeof found !== 'string') return true;
      if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but runs cannot be sandboxed here: ${found}`);
      console.warn(`skipping run tests: runs cannot be sandboxed here (${found})`);
      return false;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  })();
  return sandboxCheck;
}

/** A sandbox kind the run tests run on, and the settings that choose it. */
export interface SandboxKind {
  name: 'bubblewrap' | 'docker';
  env: Record<string, string>;
}

let dockerKind: Promise<SandboxKind | null> | undefined;

/**
 * The docker sandbox's settings when a Docker engine answers here (the
 * runner image is built from this machine's binaries, see
 * test/helpers/runner-image.ts, and a container like a run's must work);
 * otherwise null, with a line saying why, or a throw when REQUIRE_SERVICES=1.
 */
export function dockerSandboxAvailable(): Promise<SandboxKind | null> {
  dockerKind ??= (async () => {
    if (!(await dockerAvailable())) return null;
    const env = {
      TOLLGATE_RUN_SANDBOX: 'docker',
      TOLLGATE_RUN_IMAGE: await buildRunnerImage(FAKE_TOFU),
      TOLLGATE_RUN_DOCKER_HOST: `unix://${dockerSocket}`,
    };
    const scratch = await mkdtemp(path.join(tmpdir(), 'tollgate-sandbox-probe-'));
    await chmod(scratch, 0o755);
    try {
      const found = await new SandboxChooser(
        loadConfig({ PATH: process.env.PATH, TOLLGATE_RUN_DIR: scratch, ...env }).runs,
      ).get();
      if (typeof found !== 'string') return { name: 'docker' as const, env };
      if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but runs cannot be sandboxed in Docker here: ${found}`);
      console.warn(`skipping run tests on the docker sandbox: ${found}`);
      return null;
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  })();
  return dockerKind;
}

/** The sandbox kinds the run tests run on here: bubblewrap, and docker where an engine answers. */
export async function sandboxKinds(): Promise<SandboxKind[]> {
  const kinds: SandboxKind[] = [];
  if (await sandboxAvailable()) kinds.push({ name: 'bubblewrap', env: { TOLLGATE_RUN_SANDBOX: 'bubblewrap' } });
  const docker = await dockerSandboxAvailable();
  if (docker) kinds.push(docker);
  return kinds;
}

/**
 * Whether a process of a run is still running: one in its cgroup (bubblewrap; the group of a
 * gateway that died stays, empty), its container (docker).
 */
export async function runSandboxRunning(kind: SandboxKind['name'], runId: string): Promise<boolean> {
  if (kind === 'docker') return runSandboxExists(kind, runId);
  const files = [
    `/sys/fs/cgroup/tollgate-runs/run-${runId}/cgroup.procs`,
    `/sys/fs/cgroup/pids/tollgate-runs/run-${runId}/cgroup.procs`,
  ];
  for (const file of files) if ((await readFile(file, 'utf8').catch(() => '')).trim()) return true;
  return false;
}

/** Whether anything of a run's sandbox is left: its cgroup (bubblewrap), its container (docker). */
export async function runSandboxExists(kind: SandboxKind['name'], runId: string): Promise<boolean> {
  if (kind === 'bubblewrap') return runCgroupExists(runId);
  const containers = await testDocker().listContainers({ all: true, filters: { label: [`tollgate.run=${runId}`] } });
  return containers.length > 0;
}

/**
 * A GET with its own Host header, as a browser reaching the public URL through a TLS terminator
 * sends (fetch cannot set Host).
 */
export function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
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

/**
 * The cases the run tests apply stacks in: every run sandbox here and every store, each at least
 * once, paired rather than crossed (the first sandbox with the last store, the next with the one
 * before, …). What a sandbox does (the tool's folder, its processes, its cancel) does not depend on
 * the store, and what the store does (the run's row, its lease, its log) does not depend on the
 * sandbox; the stores' own behaviour under runs is claims.test.ts's. Empty without a sandbox.
 */
export async function runCases(): Promise<Array<{ kind: SandboxKind; store: StoreKind }>> {
  const kinds = await sandboxKinds();
  if (kinds.length === 0) return [];
  const stores = await availableStores();
  const count = Math.max(kinds.length, stores.length);
  return Array.from({ length: count }, (_, index) => ({
    kind: kinds[index % kinds.length]!,
    store: stores[(stores.length - 1 - (index % stores.length)) % stores.length]!,
  }));
}
