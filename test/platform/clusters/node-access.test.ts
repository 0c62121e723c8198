import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { openCredential } from '../../../src/platform/clusters/node-access.js';
import { clusterKeys } from '../../../src/shared/db/schema.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { findTool } from '../../../src/platform/runs/tool.js';
import { apiAs, orgWithUsers } from '../../surfaces/api/harness.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { requireServices } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { zipOf } from '../../helpers/zip.js';
import { type FakeNode, operatorFolder, sshWorks, startNode, startSshd } from './sshd-nodes.js';
import { dumpDatabase, secretMarkers } from './markers.js';
import { operatorCall, profileWithNodes, runEnded, runScratch, sandboxAvailable } from '../runs/harness.js';

/**
 * Runs reach their nodes through the cluster's identity, end to end with
 * real parts: two OpenSSH servers on loopback addresses play two nodes, each
 * with its own host key and account; the operator registers them with its
 * key; creating a cluster installs the cluster's key on both; a stack's
 * `remote-exec` (the real tool, in the run sandbox, through its egress
 * proxy) writes a file on each; deleting the cluster takes the key away at
 * once; a node whose host key changed is refused.
 */

const why = await missing();
if (why && requireServices) throw new Error(`REQUIRE_SERVICES=1 but the node access test cannot run: ${why}`);
if (why) console.warn(`skipping the node access test: ${why}`);

async function missing(): Promise<string | null> {
  if (process.getuid?.() !== 0) return "it makes the nodes' accounts with useradd, as root";
  if (!existsSync('/usr/sbin/sshd')) return 'there is no /usr/sbin/sshd (Debian package openssh-server)';
  if (!findTool({ pathList: process.env.PATH })) return 'there is no tofu or terraform on PATH';
  if (!(await sandboxAvailable())) return 'runs cannot be sandboxed here';
  return null;
}

const MODULE = `
variable "tollgate_run_id" { type = string }
variable "tollgate_cluster_id" { type = string }
variable "tollgate_ssh_private_key_file" { type = string }
variable "tollgate_nodes" {
  type = list(object({ id = string, address = string, ssh_user = string, ssh_port = number, host_key = string }))
}
variable "tollgate_ssh_proxy" {
  type    = object({ scheme = string, host = string, port = number })
  default = null
}
resource "terraform_data" "marker" {
  for_each = { for node in var.tollgate_nodes : node.id => node }
  connection {
    type         = "ssh"
    host         = each.value.address
    port         = each.value.ssh_port
    user         = each.value.ssh_user
    private_key  = file(var.tollgate_ssh_private_key_file)
    host_key     = each.value.host_key
    proxy_scheme = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.scheme
    proxy_host   = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.host
    proxy_port   = var.tollgate_ssh_proxy == null ? null : var.tollgate_ssh_proxy.port
  }
  provisioner "remote-exec" {
    inline = ["echo \${var.tollgate_run_id} > $HOME/written-by-\${var.tollgate_cluster_id}"]
  }
}
`;

describe.skipIf(why !== null)("node access: the cluster's identity installed, used by a run, and revoked", () => {
  let folder: string;
  let gateway: TestGateway;
  let scratch: Awaited<ReturnType<typeof runScratch>>;
  let operatorKey: string;
  const credentialsKey = randomBytes(32);
  const nodes: FakeNode[] = [];
  const logLines: string[] = [];
  /**
   * Every answer of the API the test saw (the operator's and users'), and every run's log: checked
   * for the credentials at the end.
   */
  const answers: string[] = [];
  const runLogs: string[] = [];

  beforeAll(async () => {
    ({ folder, operatorKey } = await operatorFolder('tollgate-nodes-'));
    const tag = randomBytes(3).toString('hex');
    for (const [index, name] of ['a', 'b'].entries())
      nodes.push(await startNode(folder, `tgn${tag}${name}`, `127.0.0.${index + 2}`));
    scratch = await runScratch();
    const { TOLLGATE_TOFU_BIN: _fake, ...env } = scratch.env;
    gateway = await startTestGateway(
      'pglite',
      // Bubblewrap, never `auto`: with a Docker engine that holds the runner image, auto would
      // choose docker, and the run must go through this sandbox.
      {
        ...env,
        TOLLGATE_RUN_SANDBOX: 'bubblewrap',
        TOLLGATE_PASSWORD_COST: '10',
        TOLLGATE_NODE_CREDENTIALS_KEY: credentialsKey.toString('base64'),
        TOLLGATE_NODE_SSH_TIMEOUT_MS: '5000',
      },
      { log: createLogger('debug', (line) => logLines.push(line)) },
    );
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    await scratch?.remove();
    for (const node of nodes) {
      await node.sshd.stop('SIGTERM');
      spawnSync('userdel', ['-f', node.user]);
    }
    await rm(folder, { recursive: true, force: true });
  });

  /** An operator call whose answer is kept, to check no answer carries the credential. */
  async function operator(method: string, route: string, body?: unknown) {
    const answer = await operatorCall(gateway, method, route, body);
    answers.push(JSON.stringify(answer.body));
    return answer;
  }

  /** A user's calls to the generic API, their answers kept likewise. */
  function userApi(key: string) {
    const call = apiAs(gateway, key);
    return async (method: string, route: string, body?: unknown) => {
      const answer = await call(method, route, body);
      answers.push(JSON.stringify(answer.body));
      return answer;
    };
  }

  /** A run's log as its user reads it, kept likewise. */
  async function runLog(key: string, runId: string): Promise<string> {
    const text = await (
      await fetch(`${gateway.url}/api/v1/runs/${runId}/log`, { headers: { authorization: `Bearer ${key}` } })
    ).text();
    runLogs.push(text);
    return text;
  }

  it("adds the nodes with the operator's key, checked once; a wrong host key fingerprint is refused, saying so", async () => {
    const profile = `ssh-${randomBytes(3).toString('hex')}`;
    expect((await operator('POST', '/profiles', { name: profile, gpus_per_node: 1 })).status).toBe(201);
    const wrong = await operator('POST', '/nodes', {
      profile,
      address: nodes[0]!.address,
      ssh: {
        user: nodes[0]!.user,
        port: nodes[0]!.port,
        private_key: operatorKey,
        host_key_fingerprint: nodes[1]!.fingerprint,
      },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toContain(
      `presented host key ${nodes[0]!.fingerprint}, not the pinned ${nodes[1]!.fingerprint}`,
    );
    for (const node of nodes) {
      const added = await operator('POST', '/nodes', {
        profile,
        address: node.address,
        ssh: { user: node.user, port: node.port, private_key: operatorKey, host_key_fingerprint: node.fingerprint },
      });
      expect(added.status, JSON.stringify(added.body)).toBe(201);
      expect(added.body).toMatchObject({
        address: node.address,
        state: 'free',
        ssh: { user: node.user, port: node.port, run_user: node.user, host_key_fingerprint: node.fingerprint },
      });
    }
    (globalThis as { profile?: string }).profile = profile;
  });

  it("a cluster's key reaches both nodes; a run writes a file on each through it; deleting the cluster takes the key away at once", async () => {
    const profile = (globalThis as { profile?: string }).profile!;
    const { users } = await orgWithUsers(gateway, ['owner']);
    const owner = userApi(users[0]!.key);
    const created = await owner('POST', '/clusters', {
      name: 'ssh',
      profile,
      nodes: 2,
      public_domain: `${profile}.example.test`,
    });
    expect(created.status).toBe(201);
    const clusterId = created.body.id as string;
    const ready = await until(
      'the cluster is ready',
      async () => {
        const cluster = (await owner('GET', `/clusters/${clusterId}`)).body;
        return cluster.status === 'ready' && cluster;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(ready.nodes.map((node: { identity: { state: string } }) => node.identity.state)).toEqual([
      'installed',
      'installed',
    ]);
    for (const node of nodes)
      expect(await readFile(path.join(node.home, '.ssh/authorized_keys'), 'utf8')).toContain(
        `tollgate-cluster=${clusterId}`,
      );
    // Stored sealed, bound to the cluster: the test opens it with the gateway's key.
    const [stored] = await gateway.services.db.select().from(clusterKeys).where(eq(clusterKeys.clusterId, clusterId));
    expect(stored).toMatchObject({ privateKey: null, sealedPrivateKey: expect.stringMatching(/^v1:/) });
    const clusterKey = openCredential(credentialsKey, clusterId, stored!.sealedPrivateKey!);
    for (const node of nodes) expect(await sshWorks(node, clusterKey)).toBe(true);

    // Another organization sees nothing of this cluster, and its own run cannot reach these nodes,
    // directly or through its proxy.
    const stranger = (await orgWithUsers(gateway, ['owner'])).users[0]!;
    const strangerCalls = userApi(stranger.key);
    expect((await strangerCalls('GET', `/clusters/${clusterId}`)).status).toBe(404);
    expect(
      (await strangerCalls('POST', `/clusters/${clusterId}/runs`, { stack: 'ssh-marker', inputs: {} })).status,
    ).toBe(404);
    const otherProfile = await profileWithNodes(gateway, 1);
    const strangersCluster = await strangerCalls('POST', '/clusters', {
      name: 'mine',
      profile: otherProfile,
      nodes: 1,
      public_domain: `${otherProfile}.example.test`,
    });
    expect(strangersCluster.status).toBe(201);
    const probe = `
resource "terraform_data" "probe" {
  provisioner "local-exec" {
    interpreter = ["/bin/bash", "-c"]
    command     = <<-EOT
${nodes
  .map(
    (
      node,
    ) => `(exec 3<>/dev/tcp/${node.address}/${node.port}) 2>/dev/null && echo "REACHED direct ${node.address}" || echo "BLOCKED direct ${node.address}"
answer=$( (exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT ${node.address}:${node.port} HTTP/1.1\\r\\n\\r\\n' >&3 && head -n 1 <&3) 2>/dev/null)
case "$answer" in *" 200 "*) echo "REACHED proxy ${node.address}";; *) echo "BLOCKED proxy ${node.address}";; esac`,
  )
  .join('\n')}
EOT
  }
}
`;
    const probeForm = new FormData();
    probeForm.set(
      'package',
      new Blob([new Uint8Array(await zipOf({ 'reach-probe/main.tf': probe }))], { type: 'application/zip' }),
      'reach-probe.zip',
    );
    expect(
      (
        await fetch(`${gateway.url}/api/v1/stacks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${stranger.key}` },
          body: probeForm,
        })
      ).status,
    ).toBe(201);
    const probed = await runEnded(
      strangerCalls,
      (await strangerCalls('POST', `/clusters/${strangersCluster.body.id}/runs`, { stack: 'reach-probe', inputs: {} }))
        .body.id,
      90_000,
    );
    const probeLog = await runLog(stranger.key, probed.id);
    expect(probed.state, probeLog).toBe('APPLIED');
    expect(probeLog).not.toMatch(/\(local-exec\): REACHED/);
    for (const node of nodes) {
      expect(probeLog).toContain(`BLOCKED direct ${node.address}`);
      expect(probeLog).toContain(`BLOCKED proxy ${node.address}`);
      expect(probeLog).toContain(`egress: refused ${node.address}:${node.port}`);
    }
    expect((await strangerCalls('DELETE', `/clusters/${strangersCluster.body.id}`)).status).toBe(204);

    const form = new FormData();
    form.set(
      'package',
      new Blob([new Uint8Array(await zipOf({ 'ssh-marker/main.tf': MODULE }))], { type: 'application/zip' }),
      'ssh-marker.zip',
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
      (await owner('POST', `/clusters/${clusterId}/runs`, { stack: 'ssh-marker', inputs: {} })).body.id,
      90_000,
    );
    const log = await runLog(users[0]!.key, run.id);
    expect(run.state, log).toBe('APPLIED');
    for (const node of nodes) {
      expect((await readFile(path.join(node.home, `written-by-${clusterId}`), 'utf8')).trim()).toBe(run.id);
      expect(log).toContain(`egress: connected to ${node.address}:${node.port}`);
    }

    expect((await owner('DELETE', `/clusters/${clusterId}`)).status).toBe(204);
    // At once: the answer came after the key left both nodes.
    for (const node of nodes) expect(await sshWorks(node, clusterKey)).toBe(false);
    for (const node of nodes)
      expect(await readFile(path.join(node.home, '.ssh/authorized_keys'), 'utf8')).not.toContain(clusterId);
    const listed = await operator('GET', '/nodes');
    expect(
      listed.body.data
        .filter((node: { address: string }) => nodes.some((n) => n.address === node.address))
        .map((node: { state: string }) => node.state),
    ).toEqual(['free', 'free']);
  }, 150_000);

  it('a node whose host key changed is refused: the cluster stays provisioning with the reason', async () => {
    const profile = (globalThis as { profile?: string }).profile!;
    const node = nodes[0]!;
    const pinned = node.fingerprint;
    await node.sshd.stop('SIGTERM');
    await copyFile(node.hostKeyFile, `${node.hostKeyFile}.pinned`);
    await copyFile(`${node.hostKeyFile}.pub`, `${node.hostKeyFile}.pub.pinned`);
    await rm(node.hostKeyFile);
    await rm(`${node.hostKeyFile}.pub`);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', node.hostKeyFile]);
    node.sshd = await startSshd(node);
    const { users } = await orgWithUsers(gateway, ['owner']);
    const owner = userApi(users[0]!.key);
    const created = await owner('POST', '/clusters', {
      name: 'moved',
      profile,
      nodes: 2,
      public_domain: `moved-${profile}.example.test`,
    });
    expect(created.status).toBe(201);
    const failed = await until(
      'a node of the cluster has failed',
      async () => {
        const cluster = (await owner('GET', `/clusters/${created.body.id}`)).body;
        return cluster.nodes.some((n: { identity: { state: string } }) => n.identity.state === 'failed') && cluster;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(failed.status).toBe('provisioning');
    const refused = failed.nodes.find((n: { address: string }) => n.address === node.address);
    expect(node.fingerprint).not.toBe(pinned);
    expect(refused.identity.error).toMatch(
      new RegExp(
        `${node.address}:${node.port} presented host key SHA256:\\S+, not the pinned ${escape(pinned)}: the connection was refused\\.`,
      ),
    );
    // A run waits for the cluster to be ready: 409 naming the node and why.
    const form = new FormData();
    form.set(
      'package',
      new Blob([new Uint8Array(await zipOf({ 'ssh-marker/main.tf': MODULE }))], { type: 'application/zip' }),
      'ssh-marker.zip',
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
    const queued = await owner('POST', `/clusters/${created.body.id}/runs`, { stack: 'ssh-marker', inputs: {} });
    expect(queued.status).toBe(409);
    expect(queued.body.error.message).toContain('is still provisioning');
    expect(queued.body.error.details).toContainEqual({ field: `nodes.${refused.id}`, message: refused.identity.error });

    // Deleted, the cluster's key cannot be taken off the refused node: it stays releasing, and no
    // cluster gets it.
    expect((await owner('DELETE', `/clusters/${created.body.id}`)).status).toBe(204);
    const stateOf = async (address: string) =>
      (await operator('GET', '/nodes')).body.data.find((n: { address: string }) => n.address === address).state;
    expect(await stateOf(node.address)).toBe('releasing');
    expect(await stateOf(nodes[1]!.address)).toBe('free');
    const refusedCluster = await owner('POST', '/clusters', {
      name: 'again',
      profile,
      nodes: 2,
      public_domain: `again-${profile}.example.test`,
    });
    expect(refusedCluster.status).toBe(409);
    // Once the node answers with its pinned host key again, the retries clean it and it is free.
    await node.sshd.stop('SIGTERM');
    await copyFile(`${node.hostKeyFile}.pinned`, node.hostKeyFile);
    await copyFile(`${node.hostKeyFile}.pub.pinned`, `${node.hostKeyFile}.pub`);
    node.sshd = await startSshd(node);
    expect(node.fingerprint).toBe(pinned);
    await until('the node is free again', async () => (await stateOf(node.address)) === 'free', {
      timeout: 30_000,
      interval: 100,
    });
  }, 90_000);

  it("neither the operator's credential nor a cluster's key appears in an API answer, a log line, a run's log or the database in clear", async () => {
    const stored = await gateway.services.db.select().from(clusterKeys);
    // The ssh-marker cluster, the stranger's, the moved one, and the refused one's attempt (none:
    // 409 took no nodes).
    expect(stored.length).toBeGreaterThanOrEqual(3);
    const secrets = [{ what: "the operator's key", markers: secretMarkers(operatorKey) }];
    for (const row of stored) {
      expect(row.privateKey).toBeNull();
      secrets.push({
        what: `cluster ${row.clusterId}'s key`,
        markers: secretMarkers(openCredential(credentialsKey, row.clusterId, row.sealedPrivateKey!)),
      });
    }
    const dump = await dumpDatabase(gateway.services.db);
    const places = {
      'an API answer': answers.join('\n'),
      "the gateway's log": logLines.join('\n'),
      "a run's log": runLogs.join('\n'),
      'the database': dump,
    };
    for (const [place, text] of Object.entries(places)) {
      expect(text.length, `${place}: nothing was collected`).toBeGreaterThan(1000);
      for (const { what, markers } of secrets) {
        expect(markers.length).toBeGreaterThan(10);
        for (const marker of markers)
          expect(text.includes(marker), `${place} holds ${what} (${marker.slice(0, 12)}…)`).toBe(false);
      }
      expect(text).not.toContain('PRIVATE KEY');
    }
    // The dump is the whole database: the nodes' and the clusters' sealed keys, and the runs' logs,
    // are in it.
    expect(dump).toMatch(/^-- public\.nodes: [1-9]/m);
    expect(dump).toMatch(/^-- public\.cluster_keys: [1-9]/m);
    expect(dump).toContain(',v1:');
    expect(dump).toMatch(/^-- public\.run_log_chunks: [1-9]/m);
    expect(runLogs).toHaveLength(2);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
