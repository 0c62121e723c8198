import type Docker from 'dockerode';
import type { Logger } from '../../http/log.js';
import type { DockerDefinition } from '../definitions.js';
import type { ReplicaState } from '../types.js';
import { containerName, replicaAddress } from './spec.js';

export interface DockerEngineOptions {
  docker: Docker;
  log: Logger;
  /** The gateway's environment, for `env_from`. */
  env: Record<string, string | undefined>;
  /** How often containers are reconciled and replicas health-checked. */
  pollMs: number;
  /** This gateway deployment's name (TOLLGATE_DEPLOYMENT): it touches only containers labelled with it. */
  deployment: string;
  /** Consecutive failed health checks before a ready replica is taken out. */
  unhealthyAfter?: number;
}

/** One container of the engine, as this process tracks it. */
export interface Replica {
  index: number;
  containerId: string;
  name: string;
  spec: string;
  url: string;
  state: ReplicaState;
  startedAt: number;
  inFlight: number;
  served: number;
  failures: number;
  /** Being replaced by a restart: it drains, and a reconcile pass must not put it back in rotation. */
  retiring?: boolean;
}

/**
 * Everything one Docker engine knows, shared by the files that each do one
 * job with it: `reconcile.ts` (containers to match the definition),
 * `health.ts` (replicas in and out of rotation), `routing.ts` (picking a
 * replica), `restart.ts` (rolling restarts), `engine.ts` (the loop).
 */
export interface EngineState {
  definition: DockerDefinition;
  options: DockerEngineOptions;
  /** The hash of the definition a current container was made from. */
  spec: string;
  desired: number;
  replicas: Map<number, Replica>;
  /** Back-off per replica index: consecutive deaths, reset once it is ready. */
  restarts: Map<number, { count: number; notBefore: number }>;
  /** Replacements per replica index, for operators. */
  replaced: Map<number, number>;
  /** Turns among equally loaded replicas. */
  rotation: number;
  closed: boolean;
}

/** A replica's id in routing and status: `model/index`. */
export function replicaId(state: EngineState, replica: Replica): string {
  return `${state.definition.model}/${replica.index}`;
}

/** Starts tracking a container as replica `index`, not yet in rotation (`starting` until /health answers). */
export function trackReplica(state: EngineState, index: number, container: { id: string; name?: string; startedAt: number }): Replica {
  const { definition, options } = state;
  const address = replicaAddress(definition, index, options.deployment);
  const replica: Replica = {
    index,
    containerId: container.id,
    name: container.name ?? containerName(definition, index, options.deployment),
    spec: state.spec,
    url: `http://${address.host}:${address.port}`,
    state: 'starting',
    startedAt: container.startedAt,
    inFlight: 0,
    served: 0,
    failures: 0,
  };
  state.replicas.set(index, replica);
  return replica;
}
