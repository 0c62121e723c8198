import { gpusPerReplica } from './hosts.js';
import type { Placement } from './spec.js';
import type { EngineState } from './state.js';

/**
 * Where a new replica goes: among the hosts that answer and have enough GPUs
 * free (none held by any Tollgate container there, nor placed earlier in
 * this pass), the one with the fewest of this engine's replicas, then the
 * most GPUs free, then the first listed; null when no host can take it.
 * An engine without `hosts` always goes to its one Docker host.
 *
 * @example
 * const placement = placeReplica(state); // { host: { docker_host: 'tcp://gpu-2:2376', … }, gpus: ['3'] }
 */
export function placeReplica(state: EngineState): Placement | null {
  const needed = gpusPerReplica(state.definition);
  const candidates = state.hosts
    .filter((host) => !host.down && host.failures === 0)
    .map((host) => {
      const free = host.definition.gpus.filter((id) => !host.usedGpus.has(id));
      const replicas = [...state.replicas.values()].filter((r) => r.host === host.definition.docker_host).length;
      return { host, free, replicas };
    })
    .filter((c) => c.free.length >= needed);
  if (candidates.length === 0) return null;
  candidates.sort((a, b) => a.replicas - b.replicas || b.free.length - a.free.length);
  const chosen = candidates[0]!;
  const gpus = chosen.free.slice(0, needed);
  for (const id of gpus) chosen.host.usedGpus.add(id);
  state.placing.reserve(chosen.host.definition.docker_host, gpus);
  return { host: chosen.host.definition, gpus };
}

/**
 * Whether one more replica would find a place now (the autoscaler scales up only within the GPUs
 * free).
 */
export function canPlace(state: EngineState): boolean {
  const needed = gpusPerReplica(state.definition);
  return state.hosts.some(
    (host) =>
      !host.down && host.failures === 0 && host.definition.gpus.filter((id) => !host.usedGpus.has(id)).length >= needed,
  );
}
