import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { extractStackPackage, parseHcl } from '../stacks/package.js';
import type { RunInputs } from './inputs.js';

/**
 * What the platform tells every run about its target, as `tollgate_*` variables (those the module
 * declares).
 */
export interface ClusterContext {
  runId: string;
  clusterId: string;
  clusterName: string;
  publicDomain: string;
  nodeAddresses: string[];
  /** The targeted node's address; '' when the run targets the whole cluster. */
  targetNode: string;
  /**
   * Every node with the account and port the cluster's key is installed for, and its pinned host
   * key ('' when none).
   */
  nodes: Array<{ id: string; address: string; sshUser: string; sshPort: number; hostKey: string }>;
  /** How the run's SSH reaches the nodes (the sandbox's proxy), or null. */
  sshProxy: { scheme: string; host: string; port: number } | null;
  sshPublicKey: string;
  sshPrivateKey: string;
}

/** A run's folder, ready for `tofu init` and `apply`. */
export interface Workspace {
  /** The run's folder on the host: `work/` in it is what the tool sees, the rest is the sandbox's. */
  folder: string;
  /** Where the module is on the host. */
  moduleDir: string;
  /** The module as the tool sees it, where the tool runs. */
  visibleModuleDir: string;
  /**
   * The file holding the cluster's private key (mode 0600), outside the module, as the tool sees
   * it.
   */
  keyFile: string;
  /** What the module's `manifest.json` says of a web port to expose, if anything. */
  manifestWebPort: number | null;
  /** Values of the variables the module marks `sensitive`: masked in the log. */
  sensitiveValues: string[];
  remove(): Promise<void>;
}

/**
 * The file of inputs and platform variables; OpenTofu reads every `*.auto.tfvars.json` in the
 * module.
 */
const TFVARS_FILE = 'tollgate.auto.tfvars.json';

/**
 * Unpacks a stack's module into `work/module` of a fresh folder under
 * `workDir` (mode 0700; `workDir` itself 0711, so a sandbox user can reach
 * its own folder but list no other), writes the cluster's private key to
 * `work/ssh/id_ed25519` (mode 0600; a file the run reads, never a variable's
 * value), the inputs and the platform's variables to
 * `tollgate.auto.tfvars.json`, and the stack's state on this cluster from
 * its last run to `terraform.tfstate`. `visibleWork(folder)` is where the
 * sandbox shows `work/` to the tool: paths in the tfvars are those.
 *
 * @example
 * const workspace = await prepareWorkspace({ workDir, visibleWork: () => '/workspace', zip, root, inputs, context, state });
 */
export async function prepareWorkspace(options: {
  workDir: string;
  visibleWork: (folder: string) => string;
  zip: Buffer;
  root: string;
  inputs: RunInputs;
  context: ClusterContext;
  state: Buffer | null;
}): Promise<Workspace> {
  await mkdir(options.workDir, { recursive: true, mode: 0o711 });
  const folder = await mkdtemp(path.join(options.workDir, `${options.context.runId}-`));
  const remove = () => rm(folder, { recursive: true, force: true });
  try {
    await chmod(folder, 0o700);
    const work = path.join(folder, 'work');
    const visible = options.visibleWork(folder);
    const moduleDir = path.join(work, 'module');
    await extractStackPackage(options.zip, options.root, moduleDir);
    await mkdir(path.join(work, 'ssh'), { mode: 0o700 });
    await writeFile(path.join(work, 'ssh', 'id_ed25519'), options.context.sshPrivateKey, { mode: 0o600 });
    const keyFile = path.posix.join(visible, 'ssh', 'id_ed25519');
    // The nodes' pinned host keys, for the ssh command line (the Docker provider over ssh://).
    const knownHosts = options.context.nodes
      .filter((node) => node.hostKey)
      .map((node) => `${node.sshPort === 22 ? node.address : `[${node.address}]:${node.sshPort}`} ${node.hostKey}\n`);
    await writeFile(path.join(work, 'ssh', 'known_hosts'), knownHosts.join(''), { mode: 0o644 });
    const declared = await declaredVariables(moduleDir);
    const platform: Record<string, unknown> = {
      tollgate_run_id: options.context.runId,
      tollgate_cluster_id: options.context.clusterId,
      tollgate_cluster_name: options.context.clusterName,
      tollgate_public_domain: options.context.publicDomain,
      tollgate_node_addresses: options.context.nodeAddresses,
      tollgate_target_node: options.context.targetNode,
      tollgate_ssh_public_key: options.context.sshPublicKey,
      tollgate_ssh_private_key_file: keyFile,
      tollgate_known_hosts_file: path.posix.join(visible, 'ssh', 'known_hosts'),
      tollgate_nodes: options.context.nodes.map((node) => ({
        id: node.id,
        address: node.address,
        ssh_user: node.sshUser,
        ssh_port: node.sshPort,
        host_key: node.hostKey,
      })),
      tollgate_ssh_proxy: options.context.sshProxy,
    };
    // Only what the module declares: an undeclared value is a warning on every run.
    const injected = Object.fromEntries(Object.entries(platform).filter(([name]) => declared.names.has(name)));
    await writeFile(
      path.join(moduleDir, TFVARS_FILE),
      `${JSON.stringify({ ...options.inputs, ...injected }, null, 2)}\n`,
      { mode: 0o600 },
    );
    if (options.state) await writeFile(path.join(moduleDir, 'terraform.tfstate'), options.state, { mode: 0o600 });
    const sensitiveValues = [...declared.sensitive].flatMap((name) => {
      const value = options.inputs[name];
      return value === undefined ? [] : [String(value)];
    });
    return {
      folder,
      moduleDir,
      visibleModuleDir: path.posix.join(visible, 'module'),
      keyFile,
      manifestWebPort: await manifestWebPort(moduleDir),
      sensitiveValues,
      remove,
    };
  } catch (error) {
    await remove();
    throw error;
  }
}

/**
 * The names of the module's variables, and which it marks `sensitive = true`, from its top folder's
 * `.tf` files.
 */
async function declaredVariables(moduleDir: string): Promise<{ names: Set<string>; sensitive: Set<string> }> {
  const names = new Set<string>();
  const sensitive = new Set<string>();
  for (const file of (await readdir(moduleDir)).filter((name) => name.endsWith('.tf')).sort()) {
    const parsed = (await parseHcl(file, await readFile(path.join(moduleDir, file), 'utf8')).catch(() => ({}))) as {
      variable?: Record<string, Array<{ sensitive?: unknown }>>;
    };
    for (const [name, [block] = []] of Object.entries(parsed.variable ?? {})) {
      names.add(name);
      if (block?.sensitive === true) sensitive.add(name);
    }
  }
  return { names, sensitive };
}

async function manifestWebPort(moduleDir: string): Promise<number | null> {
  try {
    const manifest = JSON.parse(await readFile(path.join(moduleDir, 'manifest.json'), 'utf8')) as {
      web_port?: unknown;
    };
    return typeof manifest.web_port === 'number' ? manifest.web_port : null;
  } catch {
    return null;
  }
}
