import { lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { INSIDE, type RunFolder, SANDBOX_UID } from './inside.js';

/**
 * The programs the sandbox is built from, found on the gateway's PATH (Debian: bubblewrap, socat,
 * util-linux).
 */
export interface BubblewrapPrograms {
  bwrap: string;
  socat: string;
  prlimit: string;
  /** Only when the gateway is root: drops to the sandbox user before bwrap starts. */
  setpriv: string | null;
}

export interface BubblewrapOptions {
  programs: BubblewrapPrograms;
  /** The host user the sandbox runs as; null: the gateway's own (it is not root). */
  user: { uid: number; gid: number } | null;
  cgroup: string;
  bounds: { memoryBytes: number; processes: number; cpus: number; cpuSeconds: number; diskBytes: number };
  providerMirror?: string;
  cliConfig?: string;
  mounts: Array<{ host: string; sandbox: string; writable: boolean }>;
  /** How often disk use and CPU time are checked against their bounds. */
  checkEveryMs?: number;
}

/**
 * bwrap's arguments for one command of a run: new user, PID, network, IPC and UTS namespaces; user
 * 65534 with no capabilities; `/usr` and a few files of `/etc` read-only; the run's `work/` (and
 * its `tmp/`) the only writable places; the tool and the egress socket bound in; then the root and
 * `/dev` remounted read-only.
 */
export function bwrapArgs(
  run: { folder: RunFolder; tool: string; toolInside: string; options: BubblewrapOptions },
  cwd: string,
): string[] {
  const args = [
    '--unshare-user',
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--uid',
    String(SANDBOX_UID),
    '--gid',
    String(SANDBOX_UID),
    '--hostname',
    'tollgate-run',
    '--die-with-parent',
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/usr',
    '/usr',
    ...systemLinks(),
    ...etcFiles(),
    '--ro-bind',
    path.join(run.folder.ctl, 'passwd'),
    '/etc/passwd',
    '--ro-bind',
    path.join(run.folder.ctl, 'group'),
    '/etc/group',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--bind',
    run.folder.work,
    INSIDE.work,
    '--bind',
    path.join(run.folder.work, 'tmp'),
    '/tmp',
    '--ro-bind',
    run.tool,
    run.toolInside,
    '--bind',
    run.folder.socket,
    INSIDE.egressSocket,
  ];
  if (run.options.providerMirror) args.push('--ro-bind', run.options.providerMirror, INSIDE.providers);
  if (run.folder.cliConfig) args.push('--ro-bind', run.folder.cliConfig, INSIDE.cliConfig);
  for (const mount of run.options.mounts) args.push(mount.writable ? '--bind' : '--ro-bind', mount.host, mount.sandbox);
  // Last, once every mount point is made: the root bwrap builds (a tmpfs the sandbox user owns,
  // holding /etc, /opt, /run) and its /dev become read-only (device files stay usable); the mounts
  // on them keep their own modes.
  args.push('--remount-ro', '/dev', '--remount-ro', '/', '--chdir', cwd);
  return args;
}

/**
 * `/bin`, `/lib`, `/lib64`, `/sbin`: links into `/usr` on a merged-usr system (as on Debian 12),
 * else read-only folders.
 */
function systemLinks(): string[] {
  return ['/bin', '/sbin', '/lib', '/lib64', '/lib32'].flatMap((name) => {
    try {
      const stat = lstatSync(name);
      if (stat.isSymbolicLink()) return ['--symlink', readlinkSync(name), name];
      return stat.isDirectory() ? ['--ro-bind', name, name] : [];
    } catch {
      return [];
    }
  });
}

/**
 * The few files of /etc a run needs (certificates, name service, `/usr/bin` links through
 * alternatives); none holds a secret.
 */
function etcFiles(): string[] {
  return [
    '/etc/ssl',
    '/etc/ca-certificates',
    '/etc/alternatives',
    '/etc/nsswitch.conf',
    '/etc/hosts',
    '/etc/localtime',
    '/etc/mime.types',
  ].flatMap((name) => {
    try {
      lstatSync(name);
      return ['--ro-bind', name, name];
    } catch {
      return [];
    }
  });
}
