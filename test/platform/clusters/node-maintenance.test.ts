import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterNodeKeys } from '../../../src/shared/db/schema.js';
import { createLogger } from '../../../src/shared/http/log.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { requireServices } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { apiAs, orgWithUsers } from '../../surfaces/api/harness.js';
import { tollgate } from '../../surfaces/cli/harness.js';
import { OPERATOR, operatorCall } from '../runs/harness.js';
import { type FakeNode, operatorFolder, newHostKey, startNode, startSshd } from './sshd-nodes.js';

/**
 * What an operator does to a node after adding it, with two real OpenSSH
 * servers as nodes: new SSH access for a node whose host key changed
 * (`PATCH /admin/v1/nodes/{id}`, `tollgate nodes update`), checked by
 * connecting once; and a node a deleted cluster's key is stuck on, released
 * (`POST /admin/v1/nodes/{id}/release`, `tollgate nodes release`): the
 * removal retried, or with `force` the node freed without it.
 */

const why = missing();
if (why && requireServices) throw new Error(`REQUIRE_SERVICES=1 but the node maintenance test cannot run: ${why}`);
if (why) console.warn(`skipping the node maintenance test: ${why}`);

function missing(): string | null {
  if (process.getuid?.() !== 0) return "it makes the nodes' accounts with useradd, as root";
  if (!existsSync('/usr/sbin/sshd')) return 'there is no /usr/sbin/sshd (Debian package openssh-server)';
  // What the fake nodes are made with, found on PATH as execFileSync finds them.
  const onPath = (name: string) =>
    (process.env.PATH ?? '').split(':').some((folder) => folder !== '' && existsSync(`${folder}/${name}`));
  for (const tool of ['ssh-keygen', 'useradd', 'chown'])
    if (!onPath(tool)) return `there is no ${tool} on PATH (Debian packages openssh-client, passwd, coreutils)`;
  return null;
}

describe.skipIf(why !== null)('node maintenance: re-pinning a node and releasing one left releasing', () => {
  let folder: string;
  let gateway: TestGateway;
  let operatorKey: string;
  let profile: string;
  const nodes: FakeNode[] = [];
  const ids: string[] = [];
  const logLines: string[] = [];
  const cli = (args: string[]) => tollgate(args, { TOLLGATE_URL: gateway.url, TOLLGATE_ADMIN_TOKEN: OPERATOR });
  const nodeView = async (id: string) =>
    (await operatorCall(gateway, 'GET', '/nodes')).body.data.find((node: { id: string }) => node.id === id);
  const keysOf = (node: FakeNode) => readFile(path.join(node.home, '.ssh/authorized_keys'), 'utf8');

  beforeAll(async () => {
    ({ folder, operatorKey } = await operatorFolder('tollgate-node-maintenance-'));
    const tag = randomBytes(3).toString('hex');
    for (const [index, name] of ['a', 'b', 'c'].entries())
      nodes.push(await startNode(folder, `tgm${tag}${name}`, `127.0.0.${index + 4}`));
    gateway = await startTestGateway(
      'pglite',
      {
        TOLLGATE_PASSWORD_COST: '10',
        TOLLGATE_NODE_CREDENTIALS_KEY: randomBytes(32).toString('base64'),
        TOLLGATE_NODE_SSH_TIMEOUT_MS: '3000',
      },
      { log: createLogger('info', (line) => logLines.push(line)) },
    );
    profile = `m-${tag}`;
    expect((await operatorCall(gateway, 'POST', '/profiles', { name: profile, gpus_per_node: 1 })).status).toBe(201);
    for (const node of nodes.slice(0, 2)) {
      const added = await operatorCall(gateway, 'POST', '/nodes', {
        profile,
        address: node.address,
        ssh: { user: node.user, port: node.port, private_key: operatorKey, host_key_fingerprint: node.fingerprint },
      });
      expect(added.status, JSON.stringify(added.body)).toBe(201);
      ids.push(added.body.id);
    }
  }, 60_000);

  afterAll(async () => {
    await gateway?.close();
    for (const node of nodes) {
      await node.sshd.stop('SIGTERM');
      spawnSync('userdel', ['-f', node.user]);
    }
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  /** A new cluster of both nodes, as a fresh organization's owner. */
  async function cluster(name: string) {
    const owner = apiAs(gateway, (await orgWithUsers(gateway, ['owner'])).users[0]!.key);
    const created = await owner('POST', '/clusters', {
      name,
      profile,
      nodes: 2,
      public_domain: `${name}-${profile}.example.test`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return { owner, id: created.body.id as string };
  }

  /**
   * A ready cluster of both nodes, deleted while the second node's sshd is down: its key stays
   * there, and the node releasing.
   */
  async function clusterLeftReleasing(name: string): Promise<string> {
    const { owner, id } = await cluster(name);
    await until('the cluster is ready', async () => (await owner('GET', `/clusters/${id}`)).body.status === 'ready', {
      timeout: 10_000,
      interval: 100,
    });
    await nodes[1]!.sshd.stop('SIGTERM');
    expect((await owner('DELETE', `/clusters/${id}`)).status).toBe(204);
    return id;
  }

  it('a node whose host key changed is re-pinned: a wrong fingerprint is refused and changes nothing; the right one is stored and the key waiting for it installed', async () => {
    const [nodeA] = nodes;
    const pinned = nodeA!.fingerprint;
    await newHostKey(nodeA!);
    const { owner, id } = await cluster('moved');
    await until(
      'the changed node has failed',
      async () =>
        (await owner('GET', `/clusters/${id}`)).body.nodes.some(
          (n: { identity: { state: string } }) => n.identity.state === 'failed',
        ),
      {
        timeout: 10_000,
        interval: 100,
      },
    );

    // Still the pinned fingerprint: the connection is refused, nothing is stored.
    const wrong = await operatorCall(gateway, 'PATCH', `/nodes/${ids[0]}`, { ssh: { host_key_fingerprint: pinned } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.message).toContain(`presented host key ${nodeA!.fingerprint}, not the pinned ${pinned}`);
    expect((await nodeView(ids[0]!)).ssh.host_key_fingerprint).toBe(pinned);
    expect(
      (await operatorCall(gateway, 'PATCH', '/nodes/node_nope', { ssh: { host_key_fingerprint: nodeA!.fingerprint } }))
        .status,
    ).toBe(404);
    expect((await operatorCall(gateway, 'PATCH', `/nodes/${ids[0]}`, {})).status).toBe(400);
    // The run user holds the cluster's key: it does not change under it.
    const runUser = await operatorCall(gateway, 'PATCH', `/nodes/${ids[0]}`, {
      ssh: { host_key_fingerprint: nodeA!.fingerprint, run_user: 'root' },
    });
    expect(runUser.status).toBe(409);
    expect(runUser.body.error.details).toEqual([
      { field: 'ssh.run_user', message: expect.stringContaining('change the run user when the node is free') },
    ]);

    // The CLI re-pins it, keeping the stored key and account; the install waiting for it is
    // retried.
    const updated = await cli(['nodes', 'update', ids[0]!, '--host-key-fingerprint', nodeA!.fingerprint, '--json']);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.json).toMatchObject({
      id: ids[0],
      state: 'allocated',
      ssh: { user: nodeA!.user, port: nodeA!.port, run_user: nodeA!.user, host_key_fingerprint: nodeA!.fingerprint },
    });
    expect(JSON.stringify(updated.json)).not.toContain(operatorKey.split('\n')[2]);
    await until('the cluster is ready', async () => (await owner('GET', `/clusters/${id}`)).body.status === 'ready', {
      timeout: 10_000,
      interval: 100,
    });
    expect(await keysOf(nodeA!)).toContain(`tollgate-cluster=${id}`);
    expect((await owner('DELETE', `/clusters/${id}`)).status).toBe(204);
    expect(await keysOf(nodeA!)).not.toContain(id);
  });

  it("a node given SSH access while allocated gets its cluster's key; one without access must be given all of it", async () => {
    const nodeC = nodes[2]!;
    const single = `s-${profile}`;
    expect((await operatorCall(gateway, 'POST', '/profiles', { name: single, gpus_per_node: 1 })).status).toBe(201);
    const added = await operatorCall(gateway, 'POST', '/nodes', { profile: single, address: nodeC.address });
    expect(added.body.ssh).toBeNull();
    const owner = apiAs(gateway, (await orgWithUsers(gateway, ['owner'])).users[0]!.key);
    const created = await owner('POST', '/clusters', {
      name: 'late',
      profile: single,
      nodes: 1,
      public_domain: `late-${profile}.example.test`,
    });
    expect(created.body).toMatchObject({ status: 'ready', nodes: [{ identity: { state: 'unmanaged' } }] });

    const partial = await operatorCall(gateway, 'PATCH', `/nodes/${added.body.id}`, {
      ssh: { host_key_fingerprint: nodeC.fingerprint },
    });
    expect(partial.status).toBe(400);
    expect(partial.body.error.details).toEqual([
      { field: 'ssh.user', message: 'Required.' },
      { field: 'ssh.private_key', message: 'Required.' },
    ]);
    const given = await operatorCall(gateway, 'PATCH', `/nodes/${added.body.id}`, {
      ssh: { user: nodeC.user, port: nodeC.port, private_key: operatorKey, host_key_fingerprint: nodeC.fingerprint },
    });
    expect(given.status, JSON.stringify(given.body)).toBe(200);
    expect(given.body).toMatchObject({
      access: `ssh://${nodeC.user}@${nodeC.address}:${nodeC.port}`,
      ssh: { user: nodeC.user, run_user: nodeC.user },
    });
    await until(
      'the cluster is ready with its key on the node',
      async () => (await owner('GET', `/clusters/${created.body.id}`)).body.nodes[0].identity.state === 'installed',
      {
        timeout: 10_000,
        interval: 100,
      },
    );
    expect(await keysOf(nodeC)).toContain(`tollgate-cluster=${created.body.id}`);
    expect((await owner('DELETE', `/clusters/${created.body.id}`)).status).toBe(204);
    expect(await keysOf(nodeC)).not.toContain(created.body.id);
  });

  it('a node left releasing is released once it answers again; until then the release says why', async () => {
    const nodeB = nodes[1]!;
    const id = await clusterLeftReleasing('stuck');
    expect(await nodeView(ids[1]!)).toMatchObject({ state: 'releasing', releasing_cluster_id: id });

    const refused = await operatorCall(gateway, 'POST', `/nodes/${ids[1]}/release`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(
      new RegExp(
        `^Cluster ${id}'s key could not be removed from node ${ids[1]}: Could not connect to ${nodeB.address}:${nodeB.port}: ECONNREFUSED\\. Fix the node's access`,
      ),
    );
    expect(refused.body.error.details).toEqual([{ field: 'node', message: expect.stringContaining('ECONNREFUSED') }]);
    const free = await operatorCall(gateway, 'POST', `/nodes/${ids[0]}/release`);
    expect(free).toMatchObject({
      status: 409,
      body: { error: { message: `Node ${ids[0]} is not releasing: it is free.` } },
    });
    expect((await operatorCall(gateway, 'POST', '/nodes/node_nope/release')).status).toBe(404);

    // The background retry would free the node too, once it answers: it is put off past this test,
    // so the release below is the one that frees it (on a slow machine, it sometimes came between
    // the node's start and the CLI).
    await gateway.services.db
      .update(clusterNodeKeys)
      .set({ nextAttemptAt: sql`now() + interval '1 hour'` })
      .where(and(eq(clusterNodeKeys.clusterId, id), eq(clusterNodeKeys.nodeId, ids[1]!)));
    nodeB.sshd = await startSshd(nodeB);
    const released = await cli(['nodes', 'release', ids[1]!]);
    expect(released.code, released.stderr).toBe(0);
    expect(released.stdout).toBe(`Node ${ids[1]} (${nodeB.address}) is free.\n`);
    expect(await keysOf(nodeB)).not.toContain(id);
  });

  it('with force a node is freed at once without removing the key, and a warning says so', async () => {
    const nodeB = nodes[1]!;
    const id = await clusterLeftReleasing('forced');
    expect((await nodeView(ids[1]!)).state).toBe('releasing');

    const forced = await cli(['nodes', 'release', ids[1]!, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toBe(
      `Node ${ids[1]} (${nodeB.address}) is free; the deleted cluster's key may still be on it.\n`,
    );
    const warning = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => String(line.message).startsWith('a node was released without removing'));
    expect(warning).toMatchObject({ level: 'warn', nodeId: ids[1], clusterId: id, address: nodeB.address });
    // Nothing retries the removal: the line stays until the operator takes it off, and the node is
    // allocatable.
    nodeB.sshd = await startSshd(nodeB);
    const after = await cluster('after');
    await until(
      'the next cluster is ready on both nodes',
      async () => (await after.owner('GET', `/clusters/${after.id}`)).body.status === 'ready',
      { timeout: 10_000, interval: 100 },
    );
    expect(await keysOf(nodeB)).toContain(`tollgate-cluster=${after.id}`);
    expect(await keysOf(nodeB)).toContain(`tollgate-cluster=${id}`);
  });
});
