import { appendFileSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import net from 'node:net';

/** Output kept per child: enough to explain a failed start, bounded for long runs. */
const MAX_LOG_CHARS = 64 * 1024;

export interface Child {
  name: string;
  pid: number;
  /** The tail of the child's stdout and stderr, for error messages. */
  output(): string;
  exited(): boolean;
  /** The exit code once it has exited (null: killed by a signal, or still running). */
  exitCode(): number | null;
  /** Resolves when the process has exited. */
  exit: Promise<void>;
  /** Sends a signal (SIGTERM by default) and waits for the exit; SIGKILL after 5 s if it lingers. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * A free loopback port: the kernel picks one for a listener on port 0, which is
 * closed again before the child binds it (a tiny race, fine on a bench box).
 *
 * @example
 * const port = await freePort();
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

const running = new Set<ChildProcess>();

// Last resort when the bench dies without reaching its cleanup: no orphans.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts a built entry point (`dist/…`, made by `npm run build`) in one node
 * process, as `npm start` runs the gateway: its pid carries the memory
 * measured and takes signals directly.
 *
 * @example
 * const sim = startBuilt('simulator', 'dist/sim/main.js', ['--port', '9000'], { cwd, env });
 */
export function startBuilt(
  name: string,
  entry: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; nodeArgs?: string[] },
): Child {
  return startChild(
    name,
    process.execPath,
    [...(options.nodeArgs ?? []), '--enable-source-maps', entry, ...args],
    options,
  );
}

/**
 * Starts any command, keeping the tail of its output, and kills it if this
 * process exits first. The benchmark and the multi-process tests share it.
 *
 * @example
 * const redis = startChild('redis', 'redis-server', ['--port', '6400'], { cwd, env: process.env });
 */
export function startChild(
  name: string,
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Child {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`${name} did not start (${command} not found?)`);
  running.add(child);
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString('utf8')).slice(-MAX_LOG_CHARS);
  };
  child.stdout?.on('data', keep);
  // BENCH_CHILD_LOG=/tmp/out: every child's whole stdout in /tmp/out.<name> too (e.g. the gateway's
  // `--trace-gc`).
  const copyTo = process.env.BENCH_CHILD_LOG;
  if (copyTo) child.stdout?.on('data', (chunk: Buffer) => appendFileSync(`${copyTo}.${name}`, chunk));
  child.stderr?.on('data', keep);
  let exited = false;
  let exitCode: number | null = null;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', (code) => {
      exited = true;
      exitCode = code;
      running.delete(child);
      resolve();
    }),
  );
  return {
    name,
    pid: child.pid,
    output: () => log,
    exited: () => exited,
    exitCode: () => exitCode,
    exit,
    async stop(signal = 'SIGTERM') {
      if (exited) return;
      child.kill(signal);
      // A graceful close waits for PGlite to flush; a stuck one gets SIGKILL.
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/**
 * Polls `url` until it answers 200; fails early if the child exits.
 *
 * @example
 * await waitForHealth(gateway, 'http://127.0.0.1:8080/health', 60_000);
 */
export async function waitForHealth(child: Child, url: string, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exited()) throw new Error(`${child.name} exited before it was healthy:\n${child.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${child.name} was not healthy at ${url} after ${timeoutMs / 1000} s:\n${child.output()}`);
}

/**
 * Resident memory of a process in MiB, from /proc (Linux only; null elsewhere).
 *
 * @example
 * const mib = await rssMiB(gateway.pid);
 */
export async function rssMiB(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}
