import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runTool, type ToolExit } from '../runner.js';
import { type BubblewrapOptions, type BubblewrapPrograms, bwrapArgs } from './bubblewrap-args.js';
import { createRunCgroup, type RunCgroup } from './cgroup.js';
import type { EgressProxy } from './egress.js';
import {
  bytesUsed,
  handSocketTo,
  INSIDE,
  prepareRunFolder,
  relayScript,
  startRunProxy,
  SANDBOX_UID,
  sandboxEnvironment,
  SSH_PROXY,
  type RunFolder,
} from './inside.js';
import type { BoundName, RunSandbox, Sandbox, SandboxCommand, SandboxRequest } from './types.js';

export type { BubblewrapOptions, BubblewrapPrograms } from './bubblewrap-args.js';

/**
 * Runs each command of a run with bubblewrap: new user, mount, PID, network,
 * IPC and UTS namespaces; a read-only system (`/usr` and a few files of
 * `/etc`, on a root remounted read-only) and the run's own `work/` folder as
 * the only writable place; user 65534 with no capabilities and no new
 * privileges; the run's own cgroup bounding memory, processes and CPU,
 * `RLIMIT_FSIZE` and a periodic check bounding disk; no network but its own
 * loopback, where a relay forwards to
 * a per-run egress proxy that lets through only the cluster's nodes and the
 * operator's allowed hosts.
 *
 * @example
 * const sandbox = new BubblewrapSandbox({ programs, user: { uid: 65534, gid: 65534 }, cgroup: 'tollgate-runs', bounds, mounts: [] });
 * const box = await sandbox.open({ runId, folder, tool: '/usr/bin/tofu', env, egress, say });
 * const exit = await box.exec({ args: ['init'], cwd: `${box.workPath}/module`, signal, killGraceMs: 10_000, onOutput });
 */
export class BubblewrapSandbox implements Sandbox {
  readonly kind = 'bubblewrap';
  readonly sshProxy = SSH_PROXY;

  constructor(private readonly options: BubblewrapOptions) {}

  workPathFor(): string {
    return INSIDE.work;
  }

  async open(request: SandboxRequest): Promise<RunSandbox> {
    const { options } = this;
    const folder = await prepareRunFolder(request.folder, options);
    await writeFile(
      path.join(folder.ctl, 'passwd'),
      `run:x:${SANDBOX_UID}:${SANDBOX_UID}:run:${INSIDE.work}/home:/bin/sh\n`,
      { mode: 0o644 },
    );
    await writeFile(path.join(folder.ctl, 'group'), `run:x:${SANDBOX_UID}:\n`, { mode: 0o644 });
    const cgroup = await createRunCgroup(options.cgroup, `run-${request.runId}`, options.bounds).catch(
      async (error: unknown) => {
        if (folder.socketDir) await rm(folder.socketDir, { recursive: true, force: true });
        throw error;
      },
    );
    let proxy: EgressProxy | undefined;
    try {
      proxy = await startRunProxy(folder, request.egress, (line) => request.say(line));
      await handSocketTo(folder.socket, options.user);
    } catch (error) {
      await proxy?.close();
      await cgroup.remove();
      throw error;
    }
    return new BubblewrapRun(options, request, folder, cgroup, proxy);
  }
}

class BubblewrapRun implements RunSandbox {
  readonly workPath = INSIDE.work;
  private diskExceeded = false;
  private cpuExceeded = false;
  private readonly checker: NodeJS.Timeout;
  /** The check under way, if any: the final one (`exceeded`) waits for it, then measures afresh. */
  private checking: Promise<void> | null = null;

  constructor(
    private readonly options: BubblewrapOptions,
    private readonly request: SandboxRequest,
    private readonly folder: RunFolder,
    private readonly cgroup: RunCgroup,
    private readonly proxy: { close(): Promise<void> },
  ) {
    this.checker = setInterval(() => void this.check(), options.checkEveryMs ?? 500);
    this.checker.unref();
  }

  exec(command: SandboxCommand): Promise<ToolExit> {
    const toolInside = path.posix.join(INSIDE.toolDir, path.basename(this.request.tool));
    const inner = command.script
      ? ['/bin/sh', '-c', command.script]
      : ['/bin/sh', '-c', relayScript(), 'sh', toolInside, ...command.args];
    const chain = [
      ...(this.options.user && this.options.programs.setpriv
        ? [
            this.options.programs.setpriv,
            `--reuid=${this.options.user.uid}`,
            `--regid=${this.options.user.gid}`,
            '--clear-groups',
            '--inh-caps=-all',
            '--no-new-privs',
            '--',
          ]
        : []),
      this.options.programs.prlimit,
      `--fsize=${this.options.bounds.diskBytes}`,
      '--core=0',
      '--',
      this.options.programs.bwrap,
      ...bwrapArgs({ folder: this.folder, tool: this.request.tool, toolInside, options: this.options }, command.cwd),
      '--',
      ...inner,
    ];
    // The first process joins the run's cgroup before anything else runs, so every process after it
    // is counted.
    const join = `${this.cgroup.procsFiles.map((file) => `echo $$ > '${file}'`).join(' && ')} && exec "$@"`;
    return runTool({
      bin: '/bin/sh',
      args: ['-c', join, 'sh', ...chain],
      cwd: this.request.folder,
      env: sandboxEnvironment(this.request.env, { cliConfig: this.folder.cliConfig !== null }),
      signal: command.signal,
      killGraceMs: command.killGraceMs,
      onOutput: command.onOutput,
      onStdout: command.onStdout,
      // SIGINT to the run's processes as a terminal's Ctrl-C would, but not to bwrap's own: the
      // outer one would die and take the namespace, and the tool, down at once.
      stop: {
        interrupt: () => this.cgroup.signalAll('SIGINT', (name) => name !== 'bwrap'),
        kill: () => this.cgroup.killAll(),
      },
    });
  }

  async exceeded(): Promise<BoundName[]> {
    // A periodic check under way may have measured before the tool's last write: wait for it, then
    // measure again.
    await this.checking;
    await this.check();
    const counts = await this.cgroup.counts();
    const bounds: BoundName[] = [];
    if (counts.oomKills > 0) bounds.push('memory');
    if (counts.forksRefused > 0) bounds.push('processes');
    if (this.cpuExceeded || counts.cpuSeconds >= this.options.bounds.cpuSeconds) bounds.push('cpu');
    if (this.diskExceeded) bounds.push('disk');
    return bounds;
  }

  async close(): Promise<void> {
    clearInterval(this.checker);
    await this.cgroup.killAll();
    await this.proxy.close();
    await this.cgroup.remove();
  }

  /** Disk use and CPU time against their bounds; going over either stops the run at once. */
  private check(): Promise<void> {
    this.checking ??= this.measure().finally(() => {
      this.checking = null;
    });
    return this.checking;
  }

  private async measure(): Promise<void> {
    try {
      const before = this.diskExceeded || this.cpuExceeded;
      if (!this.diskExceeded && (await bytesUsed(this.folder.work)) >= this.options.bounds.diskBytes)
        this.diskExceeded = true;
      if (!this.cpuExceeded && (await this.cgroup.counts()).cpuSeconds >= this.options.bounds.cpuSeconds)
        this.cpuExceeded = true;
      // Once, when first gone over: the short read of the state that follows is not killed in its
      // turn.
      if (!before && (this.diskExceeded || this.cpuExceeded)) await this.cgroup.killAll();
    } catch {
      // the folder is being removed
    }
  }
}

/** The programs bubblewrap needs, or the name of the first one missing. */
export function findPrograms(
  find: (name: string) => string | null,
  root: boolean,
): BubblewrapPrograms | { missing: string } {
  const bwrap = find('bwrap');
  const socat = find('socat');
  const prlimit = find('prlimit');
  const setpriv = root ? find('setpriv') : null;
  if (!bwrap) return { missing: 'bwrap (Debian package bubblewrap)' };
  if (!socat) return { missing: 'socat (Debian package socat)' };
  if (!prlimit) return { missing: 'prlimit (Debian package util-linux)' };
  if (root && !setpriv) return { missing: 'setpriv (Debian package util-linux)' };
  return { bwrap, socat, prlimit, setpriv };
}

/** Whether this process is root (the sandbox then drops to its own user). */
export function isRoot(): boolean {
  return process.getuid?.() === 0;
}
