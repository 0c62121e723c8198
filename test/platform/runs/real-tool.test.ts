import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTool } from '../../../src/platform/runs/tool.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { requireServices } from '../../helpers/services.js';
import { zipOf } from '../../helpers/zip.js';
import { orgWithCluster, runEnded, runScratch, sandboxKinds } from './harness.js';
import { toolAndSandboxMissing } from './tool-and-sandbox.js';

/**
 * The same contract with the real OpenTofu or Terraform when this machine
 * has one on PATH (neither is in Debian or on npm: a machine may lack it; it
 * skips then, and fails with REQUIRE_SERVICES=1, as in CI).
 * The module uses only the built-in `terraform_data` resource, so `init`
 * needs no provider download.
 */

const kinds = await sandboxKinds();
const found = findTool({ pathList: process.env.PATH });
const missing = toolAndSandboxMissing(found, kinds.length);
const tool = missing === null ? found : null;
if (missing && requireServices)
  throw new Error(
    `REQUIRE_SERVICES=1 but ${missing}: the run tests with the real tool cannot run (neither tool is in Debian or on npm; see CONTRIBUTING.md)`,
  );
if (missing) console.warn(`skipping the run test with the real tool: ${missing}`);

const MODULE = {
  'manifest.json': JSON.stringify({
    name: 'real-marker',
    title: 'A marker',
    category: 'Custom',
    inputs: [{ name: 'greeting', type: 'string', default: 'hello' }],
  }),
  'main.tf': `
variable "greeting" {
  type    = string
  default = "hello"
}
variable "tollgate_cluster_id" { type = string }
variable "tollgate_node_addresses" { type = list(string) }
resource "terraform_data" "marker" {
  input = "\${var.greeting} \${var.tollgate_cluster_id} on \${length(var.tollgate_node_addresses)} nodes"
}
output "message" { value = terraform_data.marker.output }
output "web_port" { value = 8088 }
`,
};

describe.each(tool ? kinds : [])(`runs with the real ${tool?.split('/').pop()} ($name sandbox)`, (kind) => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;

  beforeAll(async () => {
    scratch = await runScratch();
    const { TOLLGATE_TOFU_BIN: _fake, ...env } = scratch.env;
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10', ...env, ...kind.env });
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
  });

  it('applies a module: outputs, a public URL from web_port, and the state kept for the next run', async () => {
    const { owner, users, cluster } = await orgWithCluster(gateway, { globalStack: true });
    const form = new FormData();
    form.set('package', new Blob([new Uint8Array(await zipOf(MODULE))], { type: 'application/zip' }), 'real.zip');
    expect(
      (
        await fetch(`${gateway.url}/api/v1/stacks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${users[0]!.key}` },
          body: form,
        })
      ).status,
    ).toBe(201);

    const first = await runEnded(
      owner,
      (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: 'real-marker', inputs: { greeting: 'hi' } })).body
        .id,
      60_000,
    );
    expect(first).toMatchObject({
      state: 'APPLIED',
      exit_code: 0,
      outputs: { message: `hi ${cluster.id} on 2 nodes`, web_port: 8088 },
      public_url: `https://real-marker.${cluster.public_domain}`,
    });
    const log = await (
      await fetch(`${gateway.url}/api/v1/runs/${first.id}/log`, {
        headers: { authorization: `Bearer ${users[0]!.key}` },
      })
    ).text();
    expect(log).toContain('1 added, 0 changed, 0 destroyed');

    // The second run starts from the first one's state: nothing to add.
    const second = await runEnded(
      owner,
      (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: 'real-marker', inputs: { greeting: 'hi' } })).body
        .id,
      60_000,
    );
    expect(second.state).toBe('APPLIED');
    const again = await (
      await fetch(`${gateway.url}/api/v1/runs/${second.id}/log`, {
        headers: { authorization: `Bearer ${users[0]!.key}` },
      })
    ).text();
    expect(again).toContain('No changes.');
    expect(again).toContain('0 added, 0 changed, 0 destroyed');
  }, 120_000);
});

/** A module that needs a provider no registry has: only the operator's mirror can give it. */
const MIRRORED_MODULE = {
  'main.tf': `
terraform {
  required_providers {
    fake = {
      source  = "example.test/tollgate/fake"
      version = "1.0.0"
    }
  }
}
`,
};

describe.skipIf(!tool)("provider downloads from an operator's mirror, mounted read-only into the sandbox", () => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  let mirror: string;

  beforeAll(async () => {
    scratch = await runScratch();
    // The filesystem-mirror layout:
    // HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION.
    mirror = await mkdtemp(path.join(os.tmpdir(), 'tollgate-mirror-'));
    await chmod(mirror, 0o755);
    const target = path.join(mirror, 'example.test/tollgate/fake/1.0.0/linux_amd64');
    await mkdir(target, { recursive: true });
    await writeFile(path.join(target, 'terraform-provider-fake_v1.0.0'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    await chmod(mirror, 0o755);
    const { TOLLGATE_TOFU_BIN: _fake, ...env } = scratch.env;
    gateway = await startTestGateway('pglite', {
      TOLLGATE_PASSWORD_COST: '10',
      ...env,
      TOLLGATE_RUN_PROVIDER_MIRROR: mirror,
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
    await rm(mirror, { recursive: true, force: true });
  });

  it('init installs the provider from the mirror, with no network', async () => {
    const { owner, users, cluster } = await orgWithCluster(gateway);
    const form = new FormData();
    form.set(
      'package',
      new Blob([new Uint8Array(await zipOf({ 'mirrored/main.tf': MIRRORED_MODULE['main.tf'] }))], {
        type: 'application/zip',
      }),
      'mirrored.zip',
    );
    expect(
      (
        await fetch(`${gateway.url}/api/v1/stacks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${users[0]!.key}` },
          body: form,
        })
      ).status,
    ).toBe(201);
    const run = await runEnded(
      owner,
      (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: 'mirrored', inputs: {} })).body.id,
      60_000,
    );
    const log = await (
      await fetch(`${gateway.url}/api/v1/runs/${run.id}/log`, { headers: { authorization: `Bearer ${users[0]!.key}` } })
    ).text();
    // init succeeded from the mirror; apply then fails because the stand-in provider is no real
    // plugin.
    expect(log).toContain('Installed example.test/tollgate/fake v1.0.0');
    expect(log).toContain('has been successfully initialized');
    expect(run.failure).toContain('apply exited with 1');
  }, 120_000);
});
