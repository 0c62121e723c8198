import { readFileSync } from 'node:fs';
import type { nodeView, profileView } from '../../admin/views.js';
import { segment } from '../client.js';
import { UsageError } from '../errors.js';
import { table } from '../output.js';
import { BOOLEAN, type Command, type List, STRING } from './command.js';

// `profiles add|list` and `nodes add|list|update|release`: the operator's
// hardware, with the operator token.
//
// @example
// tollgate profiles add --name a100x8 --gpus 8 --gpu-model "A100 80GB"
// tollgate nodes add --profile a100x8 --address 10.0.0.5 --access ssh://ops@10.0.0.5
// tollgate nodes update node_... --host-key-fingerprint SHA256:...
// tollgate nodes release node_... [--force]

type ProfileView = ReturnType<typeof profileView>;
type NodeView = ReturnType<typeof nodeView>;

const addProfile: Command<ProfileView> = {
  name: 'profiles add',
  args: '--name N --gpus G [--gpu-model M] [--cpus C] [--memory-gib M]',
  summary:
    'Register a hardware profile: GPUs per node (metered as GPU-hours), and for display the GPU model, CPU cores and memory.',
  options: { name: STRING, gpus: STRING, 'gpu-model': STRING, cpus: STRING, 'memory-gib': STRING },
  request: (a) => ({
    method: 'POST',
    path: '/profiles',
    body: {
      name: a.required('name'),
      gpus_per_node: a.int('gpus', 0, 64) ?? missing('gpus'),
      gpu_model: a.optional('gpu-model'),
      cpu_cores: a.int('cpus', 0, 100_000),
      memory_gib: a.int('memory-gib', 0, 100_000_000),
    },
  }),
  render: (p) => `Added profile ${p.name}: ${p.gpus_per_node} GPUs per node${p.gpu_model ? ` (${p.gpu_model})` : ''}.`,
};

const listProfiles: Command<List<ProfileView>> = {
  name: 'profiles list',
  args: '',
  summary: 'List hardware profiles.',
  request: () => ({ method: 'GET', path: '/profiles' }),
  render: ({ data }) =>
    table([
      ['NAME', 'GPUS/NODE', 'GPU MODEL', 'CPUS', 'MEMORY GIB'],
      ...data.map((p) => [
        p.name,
        String(p.gpus_per_node),
        p.gpu_model || '-',
        String(p.cpu_cores),
        String(p.memory_gib),
      ]),
    ]),
};

const addNode: Command<NodeView> = {
  name: 'nodes add',
  args: '--profile P --address A [--ssh-user U --ssh-key FILE --host-key-fingerprint SHA256:… [--ssh-port 22] [--run-user U]] [--access NOTE]',
  summary:
    "Register a node of a profile: its address, and the SSH access the platform installs clusters' keys with (checked once now; the key is stored sealed).",
  options: {
    profile: STRING,
    address: STRING,
    access: STRING,
    'ssh-user': STRING,
    'ssh-port': STRING,
    'ssh-key': STRING,
    'host-key-fingerprint': STRING,
    'run-user': STRING,
  },
  request: (a) => {
    const user = a.optional('ssh-user');
    const ssh = user
      ? {
          user,
          port: a.int('ssh-port', 1, 65535) ?? 22,
          private_key: readKeyFile(a.required('ssh-key')),
          host_key_fingerprint: a.required('host-key-fingerprint'),
          run_user: a.optional('run-user'),
        }
      : undefined;
    return {
      method: 'POST',
      path: '/nodes',
      body: { profile: a.required('profile'), address: a.required('address'), access: a.optional('access'), ssh },
    };
  },
  render: (n) =>
    `Added node ${n.id} (${n.address}, ${n.profile})${n.ssh ? `; clusters' keys go to ${n.ssh.run_user} over SSH as ${n.ssh.user}, host key ${n.ssh.host_key_fingerprint}` : ''}.`,
};

/** The operator's private key file for `nodes add|update --ssh-key`. */
function readKeyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(`--ssh-key ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

const listNodes: Command<List<NodeView>> = {
  name: 'nodes list',
  args: '',
  summary: 'List nodes, with the cluster each is allocated to.',
  request: () => ({ method: 'GET', path: '/nodes' }),
  render: ({ data }) =>
    table([
      ['ID', 'PROFILE', 'ADDRESS', 'SSH', 'STATE', 'CLUSTER'],
      ...data.map((n) => [
        n.id,
        n.profile,
        n.address,
        n.ssh ? `${n.ssh.user}@:${n.ssh.port}` : '-',
        n.state,
        n.cluster_id ?? n.releasing_cluster_id ?? '-',
      ]),
    ]),
};

const updateNode: Command<NodeView> = {
  name: 'nodes update',
  args: 'ID [--ssh-user U] [--ssh-port P] [--ssh-key FILE] [--host-key-fingerprint SHA256:…] [--run-user U]',
  summary:
    "Change a node's SSH access (a host key that changed, a new key or account); what is not given is kept. Checked by connecting once before it is stored.",
  positionals: 1,
  options: {
    'ssh-user': STRING,
    'ssh-port': STRING,
    'ssh-key': STRING,
    'host-key-fingerprint': STRING,
    'run-user': STRING,
  },
  request: (a) => {
    const keyFile = a.optional('ssh-key');
    const ssh = {
      user: a.optional('ssh-user'),
      port: a.int('ssh-port', 1, 65535),
      private_key: keyFile === undefined ? undefined : readKeyFile(keyFile),
      host_key_fingerprint: a.optional('host-key-fingerprint'),
      run_user: a.optional('run-user'),
    };
    if (Object.values(ssh).every((value) => value === undefined))
      throw new UsageError(
        'give at least one of --ssh-user, --ssh-port, --ssh-key, --host-key-fingerprint, --run-user',
      );
    return { method: 'PATCH', path: `/nodes/${segment(a.id('node id'))}`, body: { ssh } };
  },
  render: (n) =>
    `Node ${n.id} (${n.address}): clusters' keys go to ${n.ssh?.run_user} over SSH as ${n.ssh?.user} on port ${n.ssh?.port}, host key ${n.ssh?.host_key_fingerprint}.`,
};

const releaseNode: Command<NodeView> = {
  name: 'nodes release',
  args: 'ID [--force]',
  summary:
    "Free a node a deleted cluster's key is still on (releasing): the key is removed now; --force frees it without removing the key.",
  positionals: 1,
  options: { force: BOOLEAN },
  request: (a) => ({
    method: 'POST',
    path: `/nodes/${segment(a.id('node id'))}/release`,
    body: { force: a.flag('force') ?? false },
  }),
  render: (n, a) =>
    `Node ${n.id} (${n.address}) is ${n.state}${a.flag('force') ? "; the deleted cluster's key may still be on it" : ''}.`,
};

export const nodeCommands: Command[] = [
  addProfile,
  listProfiles,
  addNode,
  listNodes,
  updateNode,
  releaseNode,
] as Command[];

function missing(flag: string): never {
  throw new UsageError(`--${flag} is required`);
}
