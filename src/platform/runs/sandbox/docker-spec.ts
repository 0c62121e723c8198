import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type Docker from 'dockerode';
import { INSIDE, type RunFolder, sandboxEnvironment } from './inside.js';
import type { SandboxRequest } from './types.js';

export interface DockerSandboxOptions {
  /**
   * The engine on this machine (a run's folder is bind-mounted: the engine must see the gateway's
   * files).
   */
  docker: Docker;
  /**
   * The runner image: the tool (`tofu` or `terraform`), a shell and coreutils, socat
   * (compose/runner.Dockerfile).
   */
  image: string;
  /**
   * The host user the container runs as: the sandbox user when the gateway is root, else the
   * gateway's own (it owns `work/`).
   */
  user: { uid: number; gid: number };
  /** Whether `work/` is handed to `user` (the gateway is root). */
  chown: boolean;
  bounds: { memoryBytes: number; processes: number; cpus: number; cpuSeconds: number; diskBytes: number };
  providerMirror?: string;
  cliConfig?: string;
  mounts: Array<{ host: string; sandbox: string; writable: boolean }>;
  /**
   * A container outliving its gateway ends itself after this long (the run timeout and the kill
   * grace, with room).
   */
  lifetimeSeconds: number;
  /** How often disk use and CPU time are checked against their bounds. */
  checkEveryMs?: number;
  /**
   * The gateway's log: told once when the bounds the gateway enforces from a container's cgroup
   * cannot be (BLIND_CGROUP).
   */
  warn?: (message: string) => void;
}

/**
 * Labels on every run container: `docker ps --filter label=tollgate.run` lists them;
 * `tollgate.managed` is what the test run's leftover check looks for.
 */
export const RUN_LABELS = { managed: 'tollgate.managed', run: 'tollgate.run' } as const;

/**
 * The container a run executes in: the image's system read-only, only the
 * run's folder (and /tmp in it) writable, no network (its one way out is the
 * egress proxy's socket), no capabilities, no new privileges, bounded in
 * memory, processes and CPU; its main process a `cat` that ends when the
 * gateway's stdin stream closes, or after the run's lifetime.
 */
export function runContainerSpec(
  options: DockerSandboxOptions,
  request: SandboxRequest,
  folder: RunFolder,
): Docker.ContainerCreateOptions {
  const mount = (source: string, target: string, writable: boolean) => ({
    Type: 'bind' as const,
    Source: source,
    Target: target,
    ReadOnly: !writable,
  });
  const mounts = [
    mount(folder.work, INSIDE.work, true),
    mount(path.join(folder.work, 'tmp'), '/tmp', true),
    mount(folder.socket, INSIDE.egressSocket, true),
    ...(options.providerMirror ? [mount(options.providerMirror, INSIDE.providers, false)] : []),
    ...(folder.cliConfig ? [mount(folder.cliConfig, INSIDE.cliConfig, false)] : []),
    ...options.mounts.map((extra) => mount(extra.host, extra.sandbox, extra.writable)),
  ];
  const env = sandboxEnvironment(request.env, { cliConfig: folder.cliConfig !== null });
  return {
    name: `tollgate-run-${request.runId}-${randomBytes(3).toString('hex')}`,
    Image: options.image,
    Entrypoint: ['/bin/sh', '-c', `exec timeout -s KILL ${options.lifetimeSeconds} cat >/dev/null`],
    Cmd: [],
    User: `${options.user.uid}:${options.user.gid}`,
    Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
    WorkingDir: INSIDE.work,
    Hostname: 'tollgate-run',
    Labels: { [RUN_LABELS.managed]: 'true', [RUN_LABELS.run]: request.runId },
    OpenStdin: true,
    StdinOnce: true,
    AttachStdin: true,
    HostConfig: {
      Mounts: mounts,
      ReadonlyRootfs: true,
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      IpcMode: 'private',
      Memory: options.bounds.memoryBytes,
      MemorySwap: options.bounds.memoryBytes,
      PidsLimit: options.bounds.processes,
      NanoCpus: Math.round(options.bounds.cpus * 1e9),
      Ulimits: [
        { Name: 'fsize', Soft: options.bounds.diskBytes, Hard: options.bounds.diskBytes },
        { Name: 'core', Soft: 0, Hard: 0 },
      ],
      // docker-init as PID 1: it reaps what a command leaves behind, and signals sent from inside
      // cannot end it.
      Init: true,
      AutoRemove: true,
      RestartPolicy: { Name: 'no' },
    },
  };
}
