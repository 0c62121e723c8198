import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTool } from '../../src/runs/tool.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { zipOf } from '../helpers/zip.js';
import { orgWithCluster, runEnded, runScratch } from './harness.js';

/**
 * The same contract with the real OpenTofu or Terraform when this machine
 * has one on PATH (neither is in Debian or on npm: CI machines may lack it).
 * The module uses only the built-in `terraform_data` resource, so `init`
 * needs no provider download.
 */

const tool = findTool({ pathList: process.env.PATH });
if (!tool) console.warn('skipping the run test with the real tool: neither tofu nor terraform is on PATH');

const MODULE = {
  'manifest.json': JSON.stringify({ name: 'real-marker', title: 'A marker', category: 'Custom', inputs: [{ name: 'greeting', type: 'string', default: 'hello' }] }),
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

describe.skipIf(!tool)(`runs with the real ${tool?.split('/').pop()}`, () => {
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;

  beforeAll(async () => {
    scratch = await runScratch();
    const { TOLLGATE_TOFU_BIN: _fake, ...env } = scratch.env;
    gateway = await startTestGateway('pglite', { TOLLGATE_PASSWORD_COST: '10', ...env });
  });
  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
  });

  it('applies a module: outputs, a public URL from web_port, and the state kept for the next run', async () => {
    const { owner, users, cluster } = await orgWithCluster(gateway, { globalStack: true });
    const form = new FormData();
    form.set('package', new Blob([new Uint8Array(await zipOf(MODULE))], { type: 'application/zip' }), 'real.zip');
    expect((await fetch(`${gateway.url}/api/v1/stacks`, { method: 'POST', headers: { authorization: `Bearer ${users[0]!.key}` }, body: form })).status).toBe(201);

    const first = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: 'real-marker', inputs: { greeting: 'hi' } })).body.id, 60_000);
    expect(first).toMatchObject({ state: 'APPLIED', exit_code: 0, outputs: { message: `hi ${cluster.id} on 2 nodes`, web_port: 8088 }, public_url: `https://real-marker.${cluster.public_domain}` });
    const log = await (await fetch(`${gateway.url}/api/v1/runs/${first.id}/log`, { headers: { authorization: `Bearer ${users[0]!.key}` } })).text();
    expect(log).toContain('1 added, 0 changed, 0 destroyed');

    // The second run starts from the first one's state: nothing to add.
    const second = await runEnded(owner, (await owner('POST', `/clusters/${cluster.id}/runs`, { stack: 'real-marker', inputs: { greeting: 'hi' } })).body.id, 60_000);
    expect(second.state).toBe('APPLIED');
    const again = await (await fetch(`${gateway.url}/api/v1/runs/${second.id}/log`, { headers: { authorization: `Bearer ${users[0]!.key}` } })).text();
    expect(again).toContain('0 added, 0 changed, 0 destroyed');
  }, 120_000);
});
