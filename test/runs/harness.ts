import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { apiAs, orgWithUsers } from '../api/harness.js';
import type { TestGateway } from '../helpers/gateway.js';
import { zipOf } from '../helpers/zip.js';

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

/** A folder for the runs' work folders and the tool's records, removed by `remove`. */
export async function runScratch(): Promise<{ workDir: string; records: string; env: Record<string, string>; read(): Promise<ToolRecord[]>; remove(): Promise<void> }> {
  const folder = await mkdtemp(path.join(tmpdir(), 'tollgate-runs-test-'));
  const records = path.join(folder, 'records.jsonl');
  const workDir = path.join(folder, 'work');
  return {
    workDir,
    records,
    env: { PATH: process.env.PATH ?? '', TOLLGATE_TOFU_BIN: FAKE_TOFU, TOLLGATE_RUN_DIR: workDir, TOLLGATE_RUN_ENV: 'FAKE_TOFU_RECORDS', FAKE_TOFU_RECORDS: records, TOLLGATE_RUN_POLL_MS: '50', TOLLGATE_RUN_KILL_GRACE_MS: '1000' },
    async read() {
      const text = await readFile(records, 'utf8').catch(() => '');
      return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as ToolRecord);
    },
    remove: () => rm(folder, { recursive: true, force: true }),
  };
}

/** An operator's call to /admin/v1. */
export async function operatorCall(gateway: { url: string }, method: string, route: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${gateway.url}/admin/v1${route}`, { method, headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

/** A fresh hardware profile with `count` free nodes at 127.0.0.x addresses. */
export async function profileWithNodes(gateway: { url: string }, count: number, addresses?: string[]): Promise<string> {
  const name = `p-${Math.random().toString(36).slice(2, 8)}`;
  expect((await operatorCall(gateway, 'POST', '/profiles', { name, gpus_per_node: 2 })).status).toBe(201);
  for (let i = 0; i < count; i++) expect((await operatorCall(gateway, 'POST', '/nodes', { profile: name, address: addresses?.[i] ?? `${name}-n${i}.internal` })).status).toBe(201);
  return name;
}

/** An organization (owner, member) with a cluster of `nodes` nodes, and a `fake` stack: the owner's private one, or a global one (the owner is then a platform admin). */
export async function orgWithCluster(gateway: TestGateway, options: { nodes?: number; addresses?: string[]; stackName?: string; globalStack?: boolean } = {}) {
  const { orgId, users } = await orgWithUsers(gateway, ['owner', 'member'], { platformAdmin: options.globalStack });
  const owner = apiAs(gateway, users[0]!.key);
  const member = apiAs(gateway, users[1]!.key);
  const profile = await profileWithNodes(gateway, options.nodes ?? 2, options.addresses);
  const cluster = await owner('POST', '/clusters', { name: 'lab', profile, nodes: options.nodes ?? 2, public_domain: `${profile}.example.test` });
  expect(cluster.status).toBe(201);
  const stackName = options.stackName ?? `fake-${Math.random().toString(36).slice(2, 8)}`;
  const form = new FormData();
  form.set('package', new Blob([new Uint8Array(await zipOf({ [`${stackName}/main.tf`]: FAKE_MODULE }))], { type: 'application/zip' }), `${stackName}.zip`);
  const added = await fetch(`${gateway.url}/api/v1/stacks`, { method: 'POST', headers: { authorization: `Bearer ${users[0]!.key}` }, body: form });
  expect(added.status).toBe(201);
  return { orgId, users, owner, member, profile, cluster: cluster.body as { id: string; public_domain: string; nodes: Array<{ id: string; address: string }> }, stackName };
}

/** Polls a run until it has ended (or `timeoutMs` passes) and answers it. */
export async function runEnded(call: ReturnType<typeof apiAs>, runId: string, timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = (await call('GET', `/runs/${runId}`)).body;
    if (['APPLIED', 'FAILED', 'CANCELED'].includes(run.state) || Date.now() > deadline) return run;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
