import type Docker from 'dockerode';
import type { DockerDefinition, DockerHostDefinition } from '../docker-definition.js';
import { LABELS } from './spec.js';

/** A listing that takes longer than this counts as the host not answering (a TCP host that hangs). */
const LIST_TIMEOUT_MS = 10_000;

/**
 * How long a GPU placed by this process stays taken before a listing shows the container holding
 * it.
 */
const PLACING_MS = 60_000;

/**
 * GPUs this process has placed a replica on and no listing has shown yet,
 * by host: engines reconcile apart, and another engine's pass that lists
 * the host before the container exists must not take them too. One per
 * fleet (`startFleet`), shared by its Docker engines; keyed by host, bounded
 * by the hosts' GPUs, each kept until a listing shows it or `PLACING_MS` passes.
 */
export class GpusBeingPlaced {
  private readonly byHost = new Map<string, Map<string, number>>();

  /** Marks GPUs of a host as taken by a replica being created. */
  reserve(host: string, gpus: string[]): void {
    const taken = this.byHost.get(host) ?? new Map<string, number>();
    for (const id of gpus) taken.set(id, Date.now() + PLACING_MS);
    this.byHost.set(host, taken);
  }

  /** Gives back GPUs whose replica could not be created. */
  release(host: string, gpus: string[]): void {
    for (const id of gpus) this.byHost.get(host)?.delete(id);
  }

  /**
   * What a listing shows taken, plus what is still being placed there (less what it shows, or
   * expired).
   */
  takenOn(host: string, listed: Set<string>): Set<string> {
    const taken = this.byHost.get(host);
    if (!taken) return listed;
    for (const [id, until] of taken) {
      if (listed.has(id) || until < Date.now()) taken.delete(id);
      else listed.add(id);
    }
    return listed;
  }
}

/** One Docker engine of an engine, as one reconcile pass sees it. */
export interface HostState {
  definition: DockerHostDefinition;
  docker: Docker;
  /**
   * Listings failed in a row; at `unhealthyAfter` the host is down and its replicas are placed
   * elsewhere.
   */
  failures: number;
  down: boolean;
  /**
   * GPU ids held by any Tollgate container on the host (every deployment's, every engine's), from
   * the last listing.
   */
  usedGpus: Set<string>;
}

/**
 * The Docker engines an engine runs on: its `hosts`, or the one
 * `docker_host` (with the definition's `tls` and `address`, and no GPU
 * inventory: `gpus` then goes to every replica as before).
 *
 * @example
 * hostsOf({ docker_host: 'unix:///var/run/docker.sock', hosts: undefined }); // [{ docker_host: 'unix:///var/run/docker.sock', gpus: [], gpu_runtime: 'nvidia' }]
 */
export function hostsOf(
  definition: Pick<DockerDefinition, 'hosts' | 'docker_host' | 'tls' | 'address'>,
): DockerHostDefinition[] {
  if (definition.hosts) return definition.hosts;
  return [
    {
      docker_host: definition.docker_host,
      tls: definition.tls,
      address: definition.address,
      gpus: [],
      gpu_runtime: 'nvidia',
    },
  ];
}

/**
 * GPUs each replica gets when placed on hosts with an inventory: the `gpus` count, else one when
 * any host lists GPUs.
 */
export function gpusPerReplica(definition: Pick<DockerDefinition, 'hosts' | 'gpus'>): number {
  if (!definition.hosts) return 0;
  if (typeof definition.gpus === 'number') return definition.gpus;
  return definition.hosts.some((h) => h.gpus.length > 0) ? 1 : 0;
}

/** The GPU ids a container holds, from its `tollgate.gpus` label. */
export function gpusOfLabels(labels: Record<string, string>): string[] {
  const value = labels[LABELS.gpus];
  return value ? value.split(',') : [];
}

/**
 * Lists every Tollgate container on a host (all deployments: their GPUs are
 * taken too) and keeps the host's health: null when it did not answer in time.
 */
export async function listHost(
  host: HostState,
  unhealthyAfter: number,
  placing: GpusBeingPlaced,
  timeoutMs = LIST_TIMEOUT_MS,
): Promise<Docker.ContainerInfo[] | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('listing timed out')), timeoutMs);
  });
  try {
    const containers = await Promise.race([
      host.docker.listContainers({ all: true, filters: { label: [`${LABELS.managed}=true`] } }),
      timeout,
    ]);
    host.failures = 0;
    host.down = false;
    host.usedGpus = placing.takenOn(
      host.definition.docker_host,
      new Set(containers.flatMap((c) => gpusOfLabels(c.Labels))),
    );
    return containers;
  } catch {
    host.failures += 1;
    if (host.failures >= unhealthyAfter) host.down = true;
    return null;
  } finally {
    clearTimeout(timer);
  }
}
