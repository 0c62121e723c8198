import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { startChild, type TestChild } from './processes.js';
import { requireServices } from './services.js';
import { until } from './wait.js';

/**
 * Private Redis topologies for tests, from Debian's `redis-server` and `redis-cli`: a three-master
 * Redis Cluster and a master with a replica watched by three sentinels, on free loopback ports
 * (never the shared 6379), their files in a temporary folder. `stop` ends each process by its pid
 * and removes the folder.
 */

export interface Topology {
  stop(): Promise<void>;
}

/**
 * What is missing to start the topologies here (null: nothing); under REQUIRE_SERVICES=1 an error
 * instead.
 */
export function redisTopologiesMissing(): string | null {
  for (const binary of ['redis-server', 'redis-cli']) {
    const probe = spawnSync(binary, ['--version'], { stdio: 'ignore', timeout: 5_000 });
    if (!probe.error && probe.status === 0) continue;
    const why = `${binary} cannot be run (${probe.error?.message ?? `exit status ${probe.status}`})`;
    if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but ${why}`);
    return why;
  }
  return null;
}

/** A loopback port free now, with port + 10000 (a cluster node's bus) free too. */
async function freeClusterPort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if ((await portFree(port)) && (await portFree(port + 10_000))) return port;
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

function startServer(name: string, args: string[], dir: string): TestChild {
  return startChild(name, 'redis-server', args, { cwd: dir, env: process.env });
}

async function answering(child: TestChild, port: number): Promise<void> {
  await until(
    `${child.name} answers on port ${port}`,
    async () => {
      if (child.exited()) throw new Error(`${child.name} exited:\n${child.output()}`);
      const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
      redis.on('error', () => {}); // Not up yet: asked again.
      try {
        await redis.connect();
        return (await redis.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        redis.disconnect();
      }
    },
    { detail: () => child.output() },
  );
}

/** Stops every child by its pid (SIGKILL after 5 s) and removes the folder. */
function stopper(children: TestChild[], dir: string): () => Promise<void> {
  return async () => {
    await Promise.all(children.map((child) => child.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
}

/**
 * A three-master Redis Cluster (no replicas), every slot assigned and `cluster_state:ok` on each
 * node.
 */
export async function startRedisCluster(
  masters = 3,
): Promise<Topology & { nodes: Array<{ host: string; port: number }> }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-redis-cluster-'));
  const children: TestChild[] = [];
  const stop = stopper(children, dir);
  try {
    const ports: number[] = [];
    for (let i = 0; i < masters; i++) {
      const port = await freeClusterPort();
      ports.push(port);
      const args = ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes'];
      args.push('--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--save', '', '--appendonly', 'no');
      args.push('--dir', dir);
      children.push(startServer(`redis-cluster-${port}`, args, dir));
    }
    await Promise.all(children.map((child, i) => answering(child, ports[i]!)));
    const create = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${create.stdout}${create.stderr}`);
    for (const port of ports) {
      await until(`cluster_state:ok on ${port}`, async () => {
        const redis = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
        try {
          return String(await redis.cluster('INFO')).includes('cluster_state:ok');
        } finally {
          redis.disconnect();
        }
      });
    }
    return { nodes: ports.map((port) => ({ host: '127.0.0.1', port })), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface SentinelTopology extends Topology {
  name: string;
  sentinels: Array<{ host: string; port: number }>;
  masterPort: number;
  replicaPort: number;
  /** Asks a sentinel to fail over now, and waits until the sentinels name the replica as master. */
  failover(): Promise<void>;
}

/**
 * A master, its replica and three sentinels watching them (quorum 2), the master's name
 * `tollgate-test`.
 */
export async function startRedisSentinel(): Promise<SentinelTopology> {
  const name = 'tollgate-test';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-redis-sentinel-'));
  const children: TestChild[] = [];
  const stop = stopper(children, dir);
  try {
    const [masterPort, replicaPort] = [await freeClusterPort(), await freeClusterPort()];
    const base = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
    const master = startServer('redis-master', ['--port', String(masterPort), ...base], dir);
    children.push(master);
    const replicaArgs = ['--port', String(replicaPort), ...base, '--replicaof', '127.0.0.1', String(masterPort)];
    const replica = startServer('redis-replica', replicaArgs, dir);
    children.push(replica);
    await answering(master, masterPort);
    await answering(replica, replicaPort);
    const sentinelPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const port = await freeClusterPort();
      sentinelPorts.push(port);
      const config = path.join(dir, `sentinel-${port}.conf`);
      writeFileSync(
        config,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor ${name} 127.0.0.1 ${masterPort} 2`,
          `sentinel down-after-milliseconds ${name} 1000`,
          `sentinel failover-timeout ${name} 5000`,
          '',
        ].join('\n'),
      );
      const sentinel = startServer(`redis-sentinel-${port}`, [config, '--sentinel'], dir);
      children.push(sentinel);
      await answering(sentinel, port);
    }
    const ask = async (port: number) => {
      const sentinel = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
      try {
        return (await sentinel.call('SENTINEL', 'get-master-addr-by-name', name)) as [string, string] | null;
      } finally {
        sentinel.disconnect();
      }
    };
    // Every sentinel sees the replica (a failover needs one), and the others.
    await until('the sentinels know the replica and each other', async () => {
      for (const port of sentinelPorts) {
        const sentinel = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 0 });
        try {
          const [replicas, others] = (await Promise.all([
            sentinel.call('SENTINEL', 'replicas', name),
            sentinel.call('SENTINEL', 'sentinels', name),
          ])) as [unknown[], unknown[]];
          if (replicas.length < 1 || others.length < 2) return false;
        } finally {
          sentinel.disconnect();
        }
      }
      return true;
    });
    const failover = async () => {
      const sentinel = new Redis({ port: sentinelPorts[0]!, host: '127.0.0.1', maxRetriesPerRequest: 0 });
      try {
        await sentinel.call('SENTINEL', 'FAILOVER', name);
      } finally {
        sentinel.disconnect();
      }
      await until(
        'the sentinels name the replica as master',
        async () => {
          const answers = await Promise.all(sentinelPorts.map(ask));
          return answers.every((addr) => addr?.[1] === String(replicaPort));
        },
        { timeout: 20_000 },
      );
    };
    const sentinels = sentinelPorts.map((port) => ({ host: '127.0.0.1', port }));
    return { name, sentinels, masterPort, replicaPort, failover, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
