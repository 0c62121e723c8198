import { spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'vitest';
import { freePort, startChild, type Child as TestChild, waitForHealth } from '../../bench/processes.js';
import { requireServices } from './services.js';
import { until } from './wait.js';

/**
 * Child processes for tests that need more than one process: gateway replicas
 * (`node dist/main.js`) and a Redis server of the test's own.
 * Starting and stopping them is the benchmark's code (`bench/processes.ts`):
 * every child is killed when the test process exits, whatever happened.
 */

export const repoRoot = path.resolve(import.meta.dirname, '../..');

export { freePort, startChild, waitForHealth } from '../../bench/processes.js';
export type { Child as TestChild } from '../../bench/processes.js';

export interface GatewayProcess {
  child: TestChild;
  /** `http://127.0.0.1:PORT` */
  url: string;
}

/**
 * Starts the gateway as its own process, as `npm start` does (the build in
 * `dist/`, made by the test run's global setup), and waits for /health.
 * The parent's TOLLGATE_* settings are not inherited: only `env` configures it.
 * `wrapper` is a command that runs it (`unshare …`): the child is then the
 * wrapper, which must pass signals on or end the gateway with itself.
 */
export async function startGatewayProcess(
  name: string,
  env: Record<string, string>,
  options: { wrapper?: string[] } = {},
): Promise<GatewayProcess> {
  const port = await freePort();
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(TOLLGATE_|DATABASE_URL$|REDIS_URL$|PORT$)/.test(key)),
  );
  const [command, ...args] = [...(options.wrapper ?? []), process.execPath, '--enable-source-maps', 'dist/main.js'];
  const child = startChild(name, command, args, {
    cwd: repoRoot,
    env: {
      ...inherited,
      TOLLGATE_HOST: '127.0.0.1',
      TOLLGATE_LOG_LEVEL: 'warn',
      TOLLGATE_SEED_DEMO: 'false',
      ...env,
      PORT: String(port),
    },
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(child, `${url}/health`);
  } catch (error) {
    await child.stop('SIGKILL');
    throw error;
  }
  return { child, url };
}

/**
 * Whether `redis-server` can be run here. Missing: false with a line saying
 * so, or an error under REQUIRE_SERVICES=1.
 */
export function redisServerAvailable(): boolean {
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore', timeout: 5_000 });
  if (!probe.error && probe.status === 0) return true;
  const why = probe.error ? probe.error.message : `exit status ${probe.status}`;
  if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but redis-server cannot be run: ${why}`);
  console.warn(`skipping tests that start their own Redis: redis-server cannot be run (${why})`);
  return false;
}

/**
 * Starts a throwaway redis-server on loopback (no persistence) and waits until
 * it answers PING.
 */
export async function startRedisServer(port: number, cwd: string): Promise<TestChild> {
  const child = startChild(
    'redis-server',
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      cwd,
      env: process.env,
    },
  );
  try {
    await until(
      `redis-server answers PING on port ${port}`,
      async () => {
        if (child.exited()) throw new Error(`redis-server exited on port ${port}:\n${child.output()}`);
        return redisPing(port);
      },
      { detail: () => child.output() },
    );
  } catch (error) {
    await child.stop('SIGKILL');
    throw error;
  }
  return child;
}

/** Whether a Redis on this loopback port answers PING (within 1 s). */
export function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), 1_000);
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/**
 * One call to a gateway's management API (`/admin/v1`), its answer parsed;
 * any status but 2xx throws with the answer's text.
 *
 * @example
 * const org = await adminCallTo(gateway.url, ADMIN_TOKEN, 'POST', '/orgs', { name: 'acme' });
 */
export async function adminCallTo<T = Record<string, unknown>>(
  baseUrl: string,
  token: string,
  method: string,
  route: string,
  body?: unknown,
): Promise<T> {
  const response = await fetch(`${baseUrl}/admin/v1${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} /admin/v1${route} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

/**
 * Resolves once `replica` has dropped what its admission cache read before
 * this call (it reads the catalog version every TOLLGATE_CATALOG_POLL_MS), so
 * a change committed before the call, through any replica, is in force there.
 *
 * The marker is a key of its own, made through `via`'s API after the change,
 * used once on `replica` (which keeps it), then revoked through `via`:
 * `replica` refuses it only once it has dropped what it held since, and reads
 * everything afresh from then on. `via` must be another replica: a replica's
 * own writes drop its cache at once, whatever its poll has seen.
 */
export async function catalogSeenBy(
  replica: GatewayProcess,
  via: GatewayProcess,
  adminToken: string,
  timeout = 10_000,
): Promise<void> {
  if (replica.url === via.url) throw new Error('catalogSeenBy: the marker must be made through another replica');
  const org = await adminCallTo<{ id: string }>(via.url, adminToken, 'POST', '/orgs', { name: 'catalog marker' });
  const key = await adminCallTo<{ id: string; secret: string }>(via.url, adminToken, 'POST', `/orgs/${org.id}/keys`, {
    name: 'catalog marker',
  });
  const status = async () => {
    const response = await fetch(`${replica.url}/v1/models`, {
      headers: { authorization: `Bearer ${key.secret}` },
      signal: AbortSignal.timeout(5_000),
    });
    await response.arrayBuffer();
    if (response.status !== 200 && response.status !== 401)
      throw new Error(`${replica.url}/v1/models answered the marker key ${response.status}`);
    return response.status;
  };
  expect(await status(), 'the marker key, before it is revoked').toBe(200);
  await adminCallTo(via.url, adminToken, 'POST', `/keys/${key.id}/revoke`);
  await until(
    `${replica.url} refuses the revoked marker key (its catalog poll has seen the change)`,
    async () => (await status()) === 401,
    { timeout },
  );
}
