import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { requireServices } from './services.js';

/**
 * Child processes for tests that need more than one process: gateway replicas
 * (`node --import tsx src/main.ts`) and a Redis server of the test's own.
 * Every child is killed when the test process exits, whatever happened.
 */

export const repoRoot = path.resolve(import.meta.dirname, '../..');

/** Output kept per child: enough to explain a failed start. */
const MAX_LOG_CHARS = 64 * 1024;

export interface TestChild {
  name: string;
  pid: number;
  /** The tail of the child's stdout and stderr. */
  output(): string;
  exited(): boolean;
  /** Resolves when the process has exited. */
  exit: Promise<void>;
  /** Sends a signal and waits for the exit (SIGKILL after 5 s if it lingers). */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

const running = new Set<ChildProcess>();

// Last resort when a test file dies before its afterAll: no orphans.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * A free loopback port: the kernel picks one for a listener on port 0, which is
 * closed again before the child binds it (a tiny race, fine for tests).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export function startChild(name: string, command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): TestChild {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`${name} did not start (${command} not found?)`);
  running.add(child);
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-MAX_LOG_CHARS);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      running.delete(child);
      resolve();
    }),
  );
  return {
    name,
    pid: child.pid,
    output: () => log,
    exited: () => exited,
    exit,
    async stop(signal = 'SIGTERM') {
      if (exited) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** Polls `url` until it answers 200; fails early if the child exits. */
export async function waitForHealth(child: TestChild, url: string, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exited()) throw new Error(`${child.name} exited before it was healthy:\n${child.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  throw new Error(`${child.name} was not healthy at ${url} after ${timeoutMs / 1000} s:\n${child.output()}`);
}

export interface GatewayProcess {
  child: TestChild;
  /** `http://127.0.0.1:PORT` */
  url: string;
}

/**
 * Starts the gateway as its own process (tsx's loader inside one node, so the
 * pid is the gateway's and takes signals directly) and waits for /health.
 * The parent's TOLLGATE_* settings are not inherited: only `env` configures it.
 */
export async function startGatewayProcess(name: string, env: Record<string, string>): Promise<GatewayProcess> {
  const port = await freePort();
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(TOLLGATE_|DATABASE_URL$|REDIS_URL$|PORT$)/.test(key)));
  const child = startChild(name, process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: repoRoot,
    env: { ...inherited, TOLLGATE_HOST: '127.0.0.1', TOLLGATE_LOG_LEVEL: 'warn', TOLLGATE_SEED_DEMO: 'false', ...env, PORT: String(port) },
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
  const child = startChild('redis-server', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    cwd,
    env: process.env,
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exited()) throw new Error(`redis-server exited on port ${port}:\n${child.output()}`);
    if (await redisPing(port)) return child;
    await sleep(50);
  }
  await child.stop('SIGKILL');
  throw new Error(`redis-server did not answer PING on port ${port} within 10 s:\n${child.output()}`);
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

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
