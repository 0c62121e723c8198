import type { EngineStatus, UpstreamTarget } from '../types.js';
import { type EngineState, replicaId } from './state.js';

/**
 * The ready replica with the fewest requests in flight (ties take turns),
 * not among `exclude`; null when none is ready. The target counts the
 * request in flight until it is released.
 */
export function acquireReplica(state: EngineState, exclude?: ReadonlySet<string>): UpstreamTarget | null {
  const ready = [...state.replicas.values()].filter((r) => r.state === 'ready' && !exclude?.has(replicaId(state, r)));
  if (ready.length === 0) return null;
  const fewest = Math.min(...ready.map((r) => r.inFlight));
  const candidates = ready.filter((r) => r.inFlight === fewest);
  const replica = candidates[state.rotation++ % candidates.length]!;
  replica.inFlight += 1;
  replica.served += 1;
  let released = false;
  return {
    baseUrl: `${replica.url}/v1`,
    servedModelName: state.definition.served_model_name ?? state.definition.model,
    headers: {},
    replicaId: replicaId(state, replica),
    release() {
      if (released) return;
      released = true;
      replica.inFlight -= 1;
    },
    markFailed() {
      if (replica.state === 'ready') replica.state = 'unhealthy';
    },
  };
}

/** The engine and its replicas, for operators (`tollgate engines list`, `/admin/v1/engines`). */
export function engineStatus(state: EngineState): EngineStatus {
  return {
    model: state.definition.model,
    kind: 'docker',
    desiredReplicas: state.desired,
    dockerHost: state.definition.docker_host,
    replicas: [...state.replicas.values()]
      .sort((a, b) => a.index - b.index)
      .map((r) => ({
        id: replicaId(state, r),
        state: r.state,
        container: { id: r.containerId, name: r.name },
        address: r.url.replace(/^http:\/\//, ''),
        startedAt: new Date(r.startedAt).toISOString(),
        uptimeSeconds: Math.floor((Date.now() - r.startedAt) / 1000),
        inFlight: r.inFlight,
        served: r.served,
        restarts: state.replaced.get(r.index) ?? 0,
      })),
  };
}
