import { chmod, chown, lstat, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type EgressPolicy, type EgressProxy, startEgressProxy } from './egress.js';

// What a run sees inside its sandbox, whatever the kind (`bubblewrap`,
// `docker`): the same paths, the same relay to its egress proxy, the same
// environment. Each kind builds its isolation around these.

/** Where things are inside the sandbox. */
export const INSIDE = {
  work: '/workspace',
  toolDir: '/opt/tollgate/bin',
  egressSocket: '/run/tollgate/egress.sock',
  providers: '/opt/tollgate/providers',
  cliConfig: '/opt/tollgate/cli.tfrc',
} as const;

/** The longest socket path used: `sun_path` holds 108 bytes with its terminating NUL. */
const SOCKET_PATH_BYTES = 107;

/** The port of the in-sandbox relay to the egress proxy; HTTPS_PROXY points at it. */
export const EGRESS_RELAY_PORT = 3128;

/**
 * How a run's SSH leaves its sandbox for the nodes: the relay, as an HTTP CONNECT proxy
 * (`tollgate_ssh_proxy`).
 */
export const SSH_PROXY = { scheme: 'http', host: '127.0.0.1', port: EGRESS_RELAY_PORT } as const;

/** The user inside every sandbox. */
export const SANDBOX_UID = 65534;

/**
 * A `sh -c` script that starts the relay (socat, 127.0.0.1:3128 to the egress
 * socket) in the background, waits until it listens, then `exec "$@"`: the
 * command it is given becomes the shell's process. The relay must listen
 * before the tool starts: it is waited for in /proc/net/tcp (port 3128 is
 * 0C38), at most 2 s. A second relay in the same network namespace (a later
 * command of a run whose first relay still runs) fails to bind and goes; the
 * first keeps serving.
 *
 * @example
 * spawn('/bin/sh', ['-c', relayScript(), 'sh', 'tofu', 'init']);
 */
export function relayScript(): string {
  const port = EGRESS_RELAY_PORT.toString(16).toUpperCase().padStart(4, '0');
  return (
    `socat TCP-LISTEN:${EGRESS_RELAY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${INSIDE.egressSocket} </dev/null >/dev/null 2>&1 & ` +
    `i=0; while [ $i -lt 200 ] && ! grep -q ':${port} 00000000:0000 0A' /proc/net/tcp; do sleep 0.01; i=$((i+1)); done; exec "$@"`
  );
}

/**
 * The tool's environment inside: what the worker gives it, with the sandbox's paths and the egress
 * relay as proxy.
 */
export function sandboxEnvironment(
  env: Record<string, string>,
  options: { cliConfig: boolean },
): Record<string, string> {
  const proxy = `http://127.0.0.1:${EGRESS_RELAY_PORT}`;
  return {
    ...env,
    PATH: `${INSIDE.toolDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    HOME: `${INSIDE.work}/home`,
    TMPDIR: '/tmp',
    USER: 'run',
    HTTPS_PROXY: proxy,
    https_proxy: proxy,
    HTTP_PROXY: proxy,
    http_proxy: proxy,
    NO_PROXY: 'localhost,127.0.0.1',
    ...(options.cliConfig ? { TF_CLI_CONFIG_FILE: INSIDE.cliConfig } : {}),
  };
}

/**
 * A run's folder on the host, laid out for a sandbox: `work/` (what the tool sees) and `ctl/` (the
 * sandbox's own files).
 */
export interface RunFolder {
  work: string;
  ctl: string;
  /**
   * The egress proxy's socket: in `ctl/`, or, when that path would pass what
   * a socket's path may hold (a deep TOLLGATE_RUN_DIR), in a private folder
   * of its own under /tmp (`socketDir`), which the sandbox removes on close.
   */
  socket: string;
  socketDir: string | null;
  /**
   * The CLI configuration the sandbox mounts at `INSIDE.cliConfig`, if any (the operator's, or one
   * naming the provider mirror).
   */
  cliConfig: string | null;
}

/**
 * Prepares `folder` for a sandbox: `work/home` and `work/tmp` (the tool's
 * HOME and /tmp: what it writes there counts towards its disk bound), `ctl/`,
 * the run folder traversable (not listable) so the sandbox user reaches
 * `work/`, which it owns when the gateway is root (`user`), and a CLI
 * configuration naming the provider mirror when the operator gave a mirror
 * but no configuration.
 */
export async function prepareRunFolder(
  folder: string,
  options: { user: { uid: number; gid: number } | null; providerMirror?: string; cliConfig?: string },
): Promise<RunFolder> {
  const work = path.join(folder, 'work');
  const ctl = path.join(folder, 'ctl');
  await mkdir(path.join(work, 'home'), { recursive: true });
  await mkdir(path.join(work, 'tmp'), { recursive: true });
  await mkdir(ctl, { recursive: true });
  await chmod(folder, 0o711);
  await chmod(ctl, 0o711);
  if (options.user) await chownTree(work, options.user.uid, options.user.gid);
  let cliConfig: string | null = options.cliConfig ?? null;
  if (options.providerMirror && !options.cliConfig) {
    cliConfig = path.join(ctl, 'cli.tfrc');
    await writeFile(cliConfig, await mirrorCliConfig(options.providerMirror), { mode: 0o644 });
  }
  const inCtl = path.join(ctl, 'egress.sock');
  if (Buffer.byteLength(inCtl) <= SOCKET_PATH_BYTES) return { work, ctl, socket: inCtl, socketDir: null, cliConfig };
  // 0711: bwrap, run as the sandbox user, reaches the socket to mount it, and no one lists the
  // folder.
  const socketDir = await mkdtemp('/tmp/tollgate-');
  await chmod(socketDir, 0o711);
  return { work, ctl, socket: path.join(socketDir, 'egress.sock'), socketDir, cliConfig };
}

/**
 * A CLI configuration that installs the providers the mirror holds from it
 * and every other one from its registry. OpenTofu and Terraform ask every
 * method that may have a provider and fail when one cannot answer, so the
 * mirror's providers (its `HOST/NAMESPACE/TYPE` folders) are excluded from
 * `direct`.
 */
async function mirrorCliConfig(mirror: string): Promise<string> {
  const names: string[] = [];
  for (const host of await readdir(mirror, { withFileTypes: true }).catch(() => [])) {
    if (!host.isDirectory()) continue;
    for (const namespace of await readdir(path.join(mirror, host.name), { withFileTypes: true }).catch(() => [])) {
      if (!namespace.isDirectory()) continue;
      for (const type of await readdir(path.join(mirror, host.name, namespace.name), { withFileTypes: true }).catch(
        () => [],
      )) {
        if (type.isDirectory()) names.push(`${host.name}/${namespace.name}/${type.name}`);
      }
    }
  }
  const list = JSON.stringify(names);
  return `provider_installation {\n  filesystem_mirror {\n    path    = "${INSIDE.providers}"\n    include = ${list}\n  }\n  direct {\n    exclude = ${list}\n  }\n}\n`;
}

/** Makes the egress socket the sandbox user's alone (the proxy listens on it already). */
export async function handSocketTo(socket: string, user: { uid: number; gid: number } | null): Promise<void> {
  if (user) await chown(socket, user.uid, user.gid);
  await chmod(socket, 0o600);
}

async function chownTree(folder: string, uid: number, gid: number): Promise<void> {
  await chown(folder, uid, gid);
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const child = path.join(folder, entry.name);
    if (entry.isDirectory()) await chownTree(child, uid, gid);
    else await chown(child, uid, gid);
  }
}

/**
 * Bytes a folder takes: per file, the larger of its allocated blocks and its length (a sparse file
 * counts as long as it looks).
 */
export async function bytesUsed(folder: string): Promise<number> {
  let total = 0;
  const stack = [folder];
  while (stack.length > 0) {
    const current = stack.pop()!;
    const entries = await readdir(current, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const child = path.join(current, entry.name);
      if (entry.isDirectory()) stack.push(child);
      else
        total += await lstat(child).then(
          // The larger of what is allocated and the file's length: blocks just written may not be
          // counted yet (delayed allocation), and a file cut at RLIMIT_FSIZE is exactly the bound
          // long.
          (stat) => Math.max(stat.blocks * 512, stat.size),
          () => 0,
        );
    }
  }
  return total;
}

/**
 * The run's egress proxy on its socket; closing it removes the socket's folder too (as does failing
 * to start).
 */
export async function startRunProxy(
  folder: RunFolder,
  policy: EgressPolicy,
  say: (line: string) => void,
): Promise<EgressProxy> {
  const removeDir = async () => {
    if (folder.socketDir) await rm(folder.socketDir, { recursive: true, force: true });
  };
  let proxy: EgressProxy;
  try {
    proxy = await startEgressProxy(folder.socket, policy, say);
  } catch (error) {
    await removeDir();
    throw error;
  }
  return { close: () => proxy.close().finally(removeDir) };
}
