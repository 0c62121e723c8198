import { createHash } from 'node:crypto';
import type { ContainerCreateOptions } from 'dockerode';
import type { DockerDefinition, DockerHostDefinition } from '../docker-definition.js';

/** Labels that mark a container as ours (this deployment's), and which engine and replica it is. */
export const LABELS = {
  managed: 'tollgate.managed',
  deployment: 'tollgate.deployment',
  engine: 'tollgate.engine',
  replica: 'tollgate.replica',
  spec: 'tollgate.spec',
  /**
   * On engines placed over `hosts`: the GPU ids the replica holds (comma-separated), and the host
   * it was placed on.
   */
  gpus: 'tollgate.gpus',
  host: 'tollgate.host',
} as const;

/**
 * Where a replica runs: its Docker host and the GPU ids placed on it (none for an engine without
 * `hosts`).
 */
export interface Placement {
  host: DockerHostDefinition;
  gpus: string[];
}

const HF_CACHE_IN_CONTAINER = '/root/.cache/huggingface';

/** Where a replica listens and is reached. */
export interface ReplicaAddress {
  /**
   * Host networking: the engine host's address and the replica's own port; a Docker network: the
   * container's name.
   */
  host: string;
  port: number;
  /** What vLLM binds to inside the container. */
  listen: string;
}

/**
 * A container's name: unique per deployment, engine and replica, so two deployments on one Docker
 * host never collide.
 */
export function containerName(definition: DockerDefinition, index: number, deployment: string): string {
  return `tollgate-${deployment}-${definition.model.replace(/[^a-zA-Z0-9_.-]/g, '-')}-${index}`;
}

/**
 * The label filter for this deployment's containers (of one engine, or all):
 * every list, adoption and removal goes through it, so a gateway never
 * touches another deployment's replicas on a shared Docker host.
 *
 * @example
 * docker.listContainers({ all: true, filters: { label: ownContainers('prod', 'qwen') } });
 */
export function ownContainers(deployment: string, model?: string): string[] {
  return [
    `${LABELS.managed}=true`,
    `${LABELS.deployment}=${deployment}`,
    ...(model === undefined ? [] : [`${LABELS.engine}=${model}`]),
  ];
}

export function replicaAddress(
  definition: DockerDefinition,
  index: number,
  deployment: string,
  on: Pick<DockerHostDefinition, 'docker_host' | 'address'> = definition,
): ReplicaAddress {
  if (definition.network === 'host') {
    const remote = /^tcp:\/\/([^:/]+)/.exec(on.docker_host)?.[1];
    const host = on.address ?? remote ?? '127.0.0.1';
    // A replica on this machine listens on loopback only; one on another host must be reachable
    // from here.
    return { host, port: definition.port + index, listen: host === '127.0.0.1' ? '127.0.0.1' : '0.0.0.0' };
  }
  return { host: containerName(definition, index, deployment), port: definition.port, listen: '0.0.0.0' };
}

/** A fingerprint of what a container is made from: a changed definition replaces its containers. */
export function specHash(definition: DockerDefinition, env: Record<string, string | undefined>): string {
  const passed = Object.fromEntries(definition.env_from.map((name) => [name, env[name] ?? '']));
  // What scaling and placement change is left out: only a changed container recipe replaces
  // replicas.
  const {
    replicas: _r,
    min_replicas: _min,
    max_replicas: _max,
    autoscaling: _a,
    hosts: _h,
    startup_timeout_s: _timeout,
    pull: _pull,
    ...shape
  } = definition;
  return createHash('sha256').update(JSON.stringify({ shape, passed })).digest('hex').slice(0, 16);
}

/**
 * The body of `POST /containers/create` for one replica: vLLM's command line
 * (`<entrypoint> <repo> --served-model-name … --host … --port …`), GPUs as
 * `HostConfig.DeviceRequests` (a count or device ids, never both), the host's
 * IPC namespace or a shared-memory size, the Hugging Face cache, and our labels.
 *
 * @example
 * const body = containerSpec(definition, 0, process.env, 'prod');
 * await docker.createContainer(body);
 */
export function containerSpec(
  definition: DockerDefinition,
  index: number,
  env: Record<string, string | undefined>,
  deployment: string,
  placement?: Placement,
): ContainerCreateOptions {
  const address = replicaAddress(definition, index, deployment, placement?.host);
  const cmd = [
    definition.hf_repo,
    '--served-model-name',
    definition.served_model_name ?? definition.model,
    '--host',
    address.listen,
    '--port',
    String(address.port),
    ...parserArgs(definition),
    ...definition.args,
  ];
  const environment = [
    ...Object.entries(definition.env).map(([name, value]) => `${name}=${value}`),
    ...definition.env_from.map((name) => `${name}=${env[name] ?? ''}`),
  ];
  return {
    name: containerName(definition, index, deployment),
    Image: definition.image,
    Entrypoint: definition.entrypoint,
    Cmd: cmd,
    Env: environment,
    Labels: {
      [LABELS.managed]: 'true',
      [LABELS.deployment]: deployment,
      [LABELS.engine]: definition.model,
      [LABELS.replica]: String(index),
      [LABELS.spec]: specHash(definition, env),
      ...(definition.hosts && placement
        ? { [LABELS.gpus]: placement.gpus.join(','), [LABELS.host]: placement.host.docker_host }
        : {}),
    },
    ...(definition.network === 'host' ? {} : { ExposedPorts: { [`${address.port}/tcp`]: {} } }),
    HostConfig: {
      NetworkMode: definition.network,
      ...(definition.ipc_host ? { IpcMode: 'host' } : {}),
      ...(definition.shm_size ? { ShmSize: bytesOf(definition.shm_size) } : {}),
      Binds: definition.hf_cache ? [`${definition.hf_cache}:${HF_CACHE_IN_CONTAINER}`] : [],
      DeviceRequests: definition.hosts ? placedDevices(placement) : deviceRequests(definition.gpus),
      // The gateway replaces dead replicas itself, with back-off; Docker restarting them too would
      // race it.
      RestartPolicy: { Name: 'no' },
    },
  };
}

function deviceRequests(
  gpus: DockerDefinition['gpus'],
): NonNullable<ContainerCreateOptions['HostConfig']>['DeviceRequests'] {
  if (gpus === undefined) return [];
  const request = { Driver: 'nvidia', Capabilities: [['gpu']] };
  if (Array.isArray(gpus)) return [{ ...request, DeviceIDs: gpus }];
  return [{ ...request, Count: gpus === 'all' ? -1 : gpus }];
}

/** Placed GPUs by id; none asked for on a host that declares `gpu_runtime: none`. */
function placedDevices(
  placement: Placement | undefined,
): NonNullable<ContainerCreateOptions['HostConfig']>['DeviceRequests'] {
  if (!placement || placement.gpus.length === 0 || placement.host.gpu_runtime === 'none') return [];
  return [{ Driver: 'nvidia', DeviceIDs: placement.gpus, Capabilities: [['gpu']] }];
}

function bytesOf(size: string): number {
  const match = /^(\d+)([kmg]?)$/i.exec(size)!;
  const unit = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[match[2]!.toLowerCase() as '' | 'k' | 'm' | 'g'];
  return Number(match[1]) * unit;
}

/**
 * vLLM's flags for the model family's tool calls and reasoning, from the definition's parsers, and
 * its scheduling policy when the definition asks for priority scheduling (unless its own `args`
 * already say).
 *
 * @example
 * parserArgs({ tool_call_parser: 'hermes' }); // ['--enable-auto-tool-choice', '--tool-call-parser', 'hermes']
 */
export function parserArgs(
  definition: Pick<DockerDefinition, 'tool_call_parser' | 'reasoning_parser'> &
    Partial<Pick<DockerDefinition, 'scheduling_policy' | 'args'>>,
): string[] {
  const args: string[] = [];
  if (definition.scheduling_policy === 'priority' && !definition.args?.includes('--scheduling-policy'))
    args.push('--scheduling-policy', 'priority');
  if (definition.tool_call_parser)
    args.push('--enable-auto-tool-choice', '--tool-call-parser', definition.tool_call_parser);
  if (definition.reasoning_parser) args.push('--reasoning-parser', definition.reasoning_parser);
  return args;
}
