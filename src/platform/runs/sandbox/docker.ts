import path from 'node:path';
import type Docker from 'dockerode';
import type { ToolExit } from '../runner.js';
import { cgroupOfProcess, type CgroupCounts } from './cgroup.js';
import { exitOf, relayOutput } from './docker-exec.js';
import { type DockerSandboxOptions, RUN_LABELS, runContainerSpec } from './docker-spec.js';
import type { EgressProxy } from './egress.js';
import {
  bytesUsed,
  handSocketTo,
  INSIDE,
  prepareRunFolder,
  relayScript,
  startRunProxy,
  SSH_PROXY,
  type RunFolder,
} from './inside.js';
import type { BoundName, RunSandbox, Sandbox, SandboxCommand, SandboxRequest } from './types.js';

export type { DockerSandboxOptions } from './docker-spec.js';

export { RUN_LABELS };

/**
 * What the gateway says, in its log once and in every run's log, when it cannot read a run
 * container's cgroup.
 */
export const BLIND_CGROUP =
  "the gateway cannot read the run container's cgroup (it runs in another PID namespace, e.g. in a container, or without /sys/fs/cgroup): TOLLGATE_RUN_CPU_SECONDS is not enforced, and a run held back by the container's process limit (TOLLGATE_RUN_PROCESSES) fails without naming it. Run the gateway on the Docker engine's host, or use TOLLGATE_RUN_SANDBOX=bubblewrap.";

/**
 * How long closing a run waits for Docker to finish removing its container (a removal already under
 * way).
 */
const REMOVAL_WAIT_MS = 30_000;

/**
 * Runs each run in its own container on the Docker engine the gateway
 * drives: the runner image, read-only, with the run's `work/` folder at
 * /workspace (and its `tmp/` at /tmp) as the only writable places and
 * nothing else of the host; its own user (65534), no capabilities, no new
 * privileges; no network but its own loopback (`NetworkMode: none`), where
 * the same relay as bubblewrap's forwards to the run's egress proxy through
 * its socket, mounted at /run/tollgate/egress.sock; the container's cgroup
 * bounding memory (and swap), processes and CPU, `RLIMIT_FSIZE` and a
 * periodic check bounding disk; the run's environment only.
 *
 * One container per run, each command (`init`, `apply`, `output`) a
 * `docker exec` in it: the container's cgroup and its counters (OOM kills,
 * refused forks, CPU time) last the whole run, so `exceeded()` reads them
 * after a command has ended, as bubblewrap's run cgroup does; the CPU time
 * bound counts the whole run; and a run pays one container start, not three.
 * Unlike bubblewrap, what a command leaves running in the background lives on
 * until the run ends (it is the same run, inside the same bounds).
 *
 * The container's main process reads its stdin, which the gateway holds open
 * (attached): when the gateway dies the container ends with it (as bwrap's
 * `--die-with-parent`), and `AutoRemove` removes it; at the latest it ends
 * after `lifetimeSeconds`.
 *
 * The tool is the image's, by the name of the one the gateway found
 * (`tofu`, `terraform`): the image must hold it under that name.
 *
 * @example
 * const sandbox = new DockerSandbox({ docker, image: 'tollgate/runner:latest', user: { uid: 65534, gid: 65534 }, chown: true, bounds, mounts: [], lifetimeSeconds: 1900 });
 * const box = await sandbox.open({ runId, folder, tool: '/usr/bin/tofu', env, egress, say });
 * const exit = await box.exec({ args: ['init'], cwd: `${box.workPath}/module`, signal, killGraceMs: 10_000, onOutput });
 */
export class DockerSandbox implements Sandbox {
  readonly kind = 'docker';
  readonly sshProxy = SSH_PROXY;
  private warned = false;

  constructor(private readonly options: DockerSandboxOptions) {}

  workPathFor(): string {
    return INSIDE.work;
  }

  async open(request: SandboxRequest): Promise<RunSandbox> {
    const { options } = this;
    const folder = await prepareRunFolder(request.folder, {
      user: options.chown ? options.user : null,
      providerMirror: options.providerMirror,
      cliConfig: options.cliConfig,
    });
    const proxy = await startRunProxy(folder, request.egress, (line) => request.say(line));
    let container: Docker.Container | null = null;
    try {
      await handSocketTo(folder.socket, options.chown ? options.user : null);
      container = await options.docker.createContainer(runContainerSpec(options, request, folder));
      // Attached before it starts: its main process ends when this stream closes (the gateway went
      // away).
      const stdin = await container.attach({ stream: true, stdin: true, stdout: false, stderr: false, hijack: true });
      await container.start();
      const info = await container.inspect();
      const group = info.State.Pid ? await cgroupOfProcess(info.State.Pid) : null;
      if (!group) this.blind(request);
      return new DockerRun(options, request, folder, container, stdin, group, proxy);
    } catch (error) {
      await container?.remove({ force: true }).catch(() => {});
      await proxy.close();
      throw error;
    }
  }

  /**
   * Never silent: a warning in the run's log, and once in the gateway's (at the first apply's
   * probe).
   */
  private blind(request: SandboxRequest): void {
    request.say(`Warning: ${BLIND_CGROUP}`);
    if (this.warned) return;
    this.warned = true;
    this.options.warn?.(BLIND_CGROUP);
  }
}

class DockerRun implements RunSandbox {
  readonly workPath = INSIDE.work;
  private diskExceeded = false;
  private cpuExceeded = false;
  /**
   * The highest counts read so far: the group goes with the container, so a stopped run keeps what
   * was counted.
   */
  private last: CgroupCounts = { oomKills: 0, forksRefused: 0, cpuSeconds: 0 };
  private readonly checker: NodeJS.Timeout;
  /** The check under way, if any: the final one (`exceeded`) waits for it, then measures afresh. */
  private checking: Promise<void> | null = null;
  private commands = 0;

  constructor(
    private readonly options: DockerSandboxOptions,
    private readonly request: SandboxRequest,
    private readonly folder: RunFolder,
    private readonly container: Docker.Container,
    private readonly stdin: NodeJS.ReadWriteStream,
    private readonly group: { counts(): Promise<CgroupCounts> } | null,
    private readonly proxy: EgressProxy,
  ) {
    this.checker = setInterval(() => void this.check(), options.checkEveryMs ?? 500);
    this.checker.unref();
  }

  async exec(command: SandboxCommand): Promise<ToolExit> {
    if (command.signal.aborted) return { code: null, signal: 'SIGINT', error: 'stopped before it started' };
    // Each command writes its shell's pid (the tool's, after exec) where a stop finds it: signals
    // go from inside the container.
    const pidFile = `/tmp/.tollgate-command-${++this.commands}.pid`;
    const tool = path.basename(this.request.tool);
    let killTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      void this.run(['/bin/sh', '-c', `kill -INT "$(cat ${pidFile})"`]).catch(() => {});
      killTimer = setTimeout(() => void this.container.kill().catch(() => {}), command.killGraceMs);
    };
    try {
      const exec = await this.container.exec({
        // Docker adds HOSTNAME to every process's environment: the tool gets the run's environment
        // only, as in bubblewrap.
        Cmd: [
          'env',
          '-u',
          'HOSTNAME',
          '/bin/sh',
          '-c',
          `echo $$ > ${pidFile}; ${command.script ?? relayScript()}`,
          'sh',
          ...(command.script ? [] : [tool, ...command.args]),
        ],
        AttachStdout: true,
        AttachStderr: true,
        WorkingDir: command.cwd,
        User: `${this.options.user.uid}:${this.options.user.gid}`,
      });
      command.signal.addEventListener('abort', stop, { once: true });
      if (command.signal.aborted) stop();
      const stream = await exec.start({ hijack: true, stdin: false });
      await relayOutput(this.options.docker.modem, stream, command);
      const { ExitCode: code } = await exec.inspect().catch(() => ({ ExitCode: null }));
      return exitOf(code, command.signal.aborted);
    } catch (error) {
      return {
        code: null,
        signal: null,
        error: error instanceof Error ? error.message.slice(0, 300) : 'docker exec failed',
      };
    } finally {
      command.signal.removeEventListener('abort', stop);
      clearTimeout(killTimer);
    }
  }

  async exceeded(): Promise<BoundName[]> {
    // A periodic check under way may have measured before the tool's last write: wait for it, then
    // measure again.
    await this.checking;
    await this.check();
    const counts = await this.counts();
    const bounds: BoundName[] = [];
    if (counts.oomKills > 0) bounds.push('memory');
    if (counts.forksRefused > 0) bounds.push('processes');
    if (this.cpuExceeded || counts.cpuSeconds >= this.options.bounds.cpuSeconds) bounds.push('cpu');
    if (this.diskExceeded) bounds.push('disk');
    return bounds;
  }

  async close(): Promise<void> {
    clearInterval(this.checker);
    this.stdin.end();
    (this.stdin as NodeJS.ReadWriteStream & { destroy?(): void }).destroy?.();
    // Gone when this answers. A refusal is waited out, asking again each second: a removal that met
    // AutoRemove's failed ("Could not kill running container") and left it "Removal In Progress"
    // until asked again.
    const removed = await this.container.remove({ force: true }).then(
      () => true,
      (error: { statusCode?: number }) => error.statusCode === 404,
    );
    for (let waited = 0; !removed && waited < REMOVAL_WAIT_MS; waited += 50) {
      const gone = await this.container.inspect().then(
        () => false,
        (error: { statusCode?: number }) => error.statusCode === 404,
      );
      if (gone) break;
      if (waited > 0 && waited % 1000 === 0) await this.container.remove({ force: true }).catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await this.proxy.close();
  }

  /** Runs a short command in the container as the sandbox user (a stop's SIGINT). */
  private async run(cmd: string[]): Promise<void> {
    const exec = await this.container.exec({ Cmd: cmd, User: `${this.options.user.uid}:${this.options.user.gid}` });
    const stream = await exec.start({ hijack: true, stdin: false });
    stream.resume();
  }

  private async counts(): Promise<CgroupCounts> {
    if (!this.group) {
      // The container's cgroup is not visible from here (the gateway in another PID namespace):
      // Docker's own word on memory.
      const oom = await this.container.inspect().then(
        (info) => info.State.OOMKilled,
        () => false,
      );
      return { ...this.last, oomKills: Math.max(this.last.oomKills, oom ? 1 : 0) };
    }
    const now = await this.group.counts().catch(() => this.last);
    this.last = {
      oomKills: Math.max(this.last.oomKills, now.oomKills),
      forksRefused: Math.max(this.last.forksRefused, now.forksRefused),
      cpuSeconds: Math.max(this.last.cpuSeconds, now.cpuSeconds),
    };
    return this.last;
  }

  /**
   * Disk use and CPU time against their bounds; going over either stops the run at once (the whole
   * container).
   */
  private check(): Promise<void> {
    this.checking ??= this.measure().finally(() => {
      this.checking = null;
    });
    return this.checking;
  }

  private async measure(): Promise<void> {
    try {
      if (!this.diskExceeded && (await bytesUsed(this.folder.work)) >= this.options.bounds.diskBytes)
        this.diskExceeded = true;
      if (!this.cpuExceeded && (await this.counts()).cpuSeconds >= this.options.bounds.cpuSeconds)
        this.cpuExceeded = true;
      if (this.diskExceeded || this.cpuExceeded) await this.container.kill().catch(() => {});
    } catch {
      // the folder is being removed
    }
  }
}
