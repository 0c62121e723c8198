import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { requireServices } from './services.js';
import { until } from './wait.js';

const run = promisify(execFile);

/**
 * A second Docker engine of a test's own: its socket, a client, and `stop`, which leaves nothing
 * behind.
 */
export interface SecondDockerd {
  /** `unix:///tmp/tollgate-dockerd-…/docker.sock`, engines.json's `docker_host` syntax. */
  host: string;
  docker: Docker;
  /**
   * Freezes the daemon (SIGSTOP): it stops answering, and its containers run on, as on a host cut
   * off.
   */
  pause(): void;
  resume(): void;
  /**
   * Stops the daemon (its containers stop with it), unmounts what it left mounted and removes its
   * folder.
   */
  stop(): Promise<void>;
}

/**
 * Whether this machine can run a second `dockerd` (root, and the binary on
 * PATH). Otherwise skips with a line saying why, or throws when
 * REQUIRE_SERVICES=1.
 */
export async function secondDockerdPossible(): Promise<boolean> {
  const why =
    process.getuid?.() !== 0
      ? 'a second dockerd needs root'
      : await run('which', ['dockerd']).then(
          () => null,
          () => 'dockerd is not on PATH',
        );
  if (!why) return true;
  if (requireServices) throw new Error(`REQUIRE_SERVICES=1 but ${why}`);
  console.warn(`skipping the two-engine tests: ${why}`);
  return false;
}

/**
 * Starts a second Docker engine on its own socket, data root, exec root and
 * pidfile (`--bridge=none --iptables=false`: host networking only, as the
 * machine's own), waits until it answers, and loads `images` into it from
 * the first engine (`docker save | docker load`), so nothing is pulled.
 *
 * @example
 * const second = await startSecondDockerd(testDocker(), [image]);
 * try { … } finally { await second.stop(); }
 */
export async function startSecondDockerd(first: Docker, images: string[]): Promise<SecondDockerd> {
  const dir = await mkdtemp('/tmp/tollgate-dockerd-');
  const log = await open(`${dir}/dockerd.log`, 'w');
  const child = spawn(
    'dockerd',
    [
      '--bridge=none',
      '--iptables=false',
      '--ip-masq=false',
      '-H',
      `unix://${dir}/docker.sock`,
      '--data-root',
      `${dir}/data`,
      '--exec-root',
      `${dir}/exec`,
      '--pidfile',
      `${dir}/docker.pid`,
    ],
    { stdio: ['ignore', log.fd, log.fd] },
  );
  const docker = new Docker({ socketPath: `${dir}/docker.sock`, timeout: 120_000 });
  const second: SecondDockerd = {
    host: `unix://${dir}/docker.sock`,
    docker,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    stop: () => stopDockerd(child, dir, log),
  };
  try {
    const dockerdLog = () => readFile(`${dir}/dockerd.log`, 'utf8');
    await until(
      'the second dockerd answers',
      async () => {
        if (child.exitCode !== null)
          throw new Error(`the second dockerd exited (${child.exitCode}):\n${await dockerdLog()}`);
        return docker.ping().then(
          () => true,
          () => false,
        );
      },
      { timeout: 60_000, interval: 200, detail: dockerdLog },
    );
    for (const image of images) {
      const saved = await first.getImage(image).get();
      const loading = await docker.loadImage(saved);
      loading.resume();
      await once(loading, 'end');
    }
    return second;
  } catch (error) {
    await second.stop();
    throw error;
  }
}

async function stopDockerd(child: ChildProcess, dir: string, log: { close(): Promise<void> }): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = once(child, 'exit');
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
  await log.close().catch(() => {});
  // Left mounted after it exits: the exec root's network namespace (and overlays of a daemon that
  // was killed).
  const mounts = (await readFile('/proc/mounts', 'utf8'))
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '')
    .filter((point) => point.startsWith(`${dir}/`))
    .reverse();
  for (const point of mounts) await run('umount', ['-l', point]).catch(() => {});
  await rm(dir, { recursive: true, force: true });
  if (existsSync(dir)) throw new Error(`could not remove ${dir}`);
}
