import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTool } from '../../../src/platform/runs/tool.js';
import { parseHcl } from '../../../src/platform/stacks/package.js';
import { requireServices } from '../../helpers/services.js';
import { repoRoot } from '../../helpers/processes.js';

/**
 * The shipped stacks (`stacks/`) with the real OpenTofu or Terraform: `fmt
 * -check` on all of them; `init -backend=false`, `validate` and a `plan` for
 * a two-node cluster (and for one node) on those that need no provider
 * download (their `terraform_data` resources and provisioners are built in),
 * which is all this machine can do without a network. The others (the Docker
 * provider's) are parsed with the HCL parser the catalog uses.
 */

const run = promisify(execFile);
const stacksDir = path.join(repoRoot, 'stacks');
const tool = findTool({ pathList: process.env.PATH });
if (!tool && requireServices)
  throw new Error(
    'REQUIRE_SERVICES=1 but neither tofu nor terraform is on PATH: the shipped stacks cannot be validated',
  );
if (!tool)
  console.warn('skipping terraform validate and fmt of the shipped stacks: neither tofu nor terraform is on PATH');

/** The tool with nothing of this machine's configuration, and no call home. */
const toolEnv = {
  PATH: process.env.PATH ?? '',
  HOME: os.tmpdir(),
  TF_CLI_CONFIG_FILE: '/dev/null',
  CHECKPOINT_DISABLE: '1',
  TF_IN_AUTOMATION: '1',
  TF_INPUT: '0',
};
const tf = (cwd: string, args: string[]) => run(tool!, args, { cwd, env: toolEnv, timeout: 120_000 });

const HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
/** What the platform injects into a run, for a cluster of two nodes in the run sandbox. */
const platformVariables = {
  tollgate_run_id: 'run_0123',
  tollgate_cluster_id: 'cls_0123',
  tollgate_cluster_name: 'Lab One',
  tollgate_public_domain: 'lab.example.test',
  tollgate_node_addresses: ['10.0.0.5', '10.0.0.6'],
  tollgate_target_node: '',
  tollgate_nodes: [
    {
      id: 'node_5f0c2b9e8d7a41c3b2a19f8e7d6c5b4a',
      address: '10.0.0.5',
      ssh_user: 'root',
      ssh_port: 22,
      host_key: HOST_KEY,
    },
    {
      id: 'node_6a1d3cae9e8b52d4c3b2a0f9e8d7c6b5',
      address: '10.0.0.6',
      ssh_user: 'tollgate',
      ssh_port: 2222,
      host_key: '',
    },
  ],
  tollgate_ssh_private_key_file: '/workspace/ssh/id_ed25519',
  tollgate_ssh_public_key: 'ssh-ed25519 AAAA… tollgate-cls_0123',
  tollgate_known_hosts_file: '/workspace/ssh/known_hosts',
  tollgate_ssh_proxy: { scheme: 'http', host: '127.0.0.1', port: 3128 },
};

interface Shipped {
  name: string;
  folder: string;
  /** Whether its module names providers to download (`required_providers`). */
  needsProviders: boolean;
  declared: Set<string>;
}

describe('the shipped stacks, parsed and checked with the real tool', () => {
  let shipped: Shipped[];
  let scratch: string;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'tollgate-shipped-'));
    shipped = [];
    for (const entry of await readdir(stacksDir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const folder = path.join(stacksDir, entry.name);
      let needsProviders = false;
      const declared = new Set<string>();
      for (const file of (await readdir(folder)).filter((name) => name.endsWith('.tf'))) {
        const parsed = (await parseHcl(file, await readFile(path.join(folder, file), 'utf8'))) as {
          terraform?: Array<{ required_providers?: unknown[] }>;
          variable?: Record<string, unknown>;
        };
        if (
          parsed.terraform?.some((block) =>
            (block.required_providers ?? []).some((providers) => Object.keys(providers as object).length > 0),
          )
        )
          needsProviders = true;
        for (const name of Object.keys(parsed.variable ?? {})) declared.add(name);
      }
      shipped.push({ name: entry.name, folder, needsProviders, declared });
    }
  });
  afterAll(() => (scratch ? rm(scratch, { recursive: true, force: true }) : undefined));

  it('parse as HCL, every one; those that install over SSH need no provider, the Docker ones the Docker provider only', () => {
    expect(shipped.map((s) => [s.name, s.needsProviders])).toEqual([
      ['k3s', false],
      ['monitoring', true],
      ['ray', false],
      ['slurm', false],
      ['vllm-serving', true],
    ]);
  });

  it('hold shell scripts that sh reads without a syntax error', async () => {
    for (const stack of shipped) {
      for (const script of (await readdir(stack.folder)).filter((name) => name.endsWith('.sh'))) {
        await expect(
          run('sh', ['-n', path.join(stack.folder, script)]),
          `${stack.name}/${script}`,
        ).resolves.toBeDefined();
      }
    }
  });

  it.skipIf(!tool)('are formatted as the tool formats them (fmt -check)', async () => {
    for (const stack of shipped) {
      const checked = await tf(stack.folder, ['fmt', '-check', '-diff', '-no-color']).catch(
        (error: { stdout?: string }) => ({ stdout: `not formatted:\n${error.stdout ?? ''}` }),
      );
      expect(checked.stdout, stack.name).toBe('');
    }
  });

  it.skipIf(!tool)(
    'validate, and plan for two nodes and for one, offline, when they need no provider download',
    { timeout: 300_000 },
    async () => {
      const offline = shipped.filter((s) => !s.needsProviders);
      expect(offline.map((s) => s.name)).toEqual(['k3s', 'ray', 'slurm']);
      for (const stack of offline) {
        const copy = path.join(scratch, stack.name);
        await cp(stack.folder, copy, { recursive: true });
        await tf(copy, ['init', '-backend=false', '-input=false', '-no-color']);
        const validated = await tf(copy, ['validate', '-no-color']);
        expect(validated.stdout, stack.name).toContain('The configuration is valid');

        // Only the declared platform variables are passed, as the workspace does.
        const injected = (overrides: Partial<typeof platformVariables>) =>
          JSON.stringify(
            Object.fromEntries(
              Object.entries({ ...platformVariables, ...overrides }).filter(([name]) => stack.declared.has(name)),
            ),
          );
        await writeFile(path.join(copy, 'tollgate.auto.tfvars.json'), injected({}));
        const whole = await tf(copy, ['plan', '-input=false', '-no-color', '-lock=false']);
        expect(whole.stdout, stack.name).toMatch(/Plan: \d+ to add, 0 to change, 0 to destroy/);
        expect(whole.stdout, stack.name).toContain('10.0.0.6');
        // Aimed at one node, unsandboxed: a one-node cluster there, with no proxy.
        await writeFile(
          path.join(copy, 'tollgate.auto.tfvars.json'),
          injected({ tollgate_target_node: '10.0.0.6', tollgate_ssh_proxy: null as never }),
        );
        const single = await tf(copy, ['plan', '-input=false', '-no-color', '-lock=false']);
        expect(single.stdout, stack.name).toMatch(/Plan: \d+ to add/);
        expect(single.stdout, stack.name).not.toContain('10.0.0.5');
      }
    },
  );
});
