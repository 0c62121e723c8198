import type Docker from 'dockerode';
import type { Logger } from '../../../shared/http/log.js';
import type { DockerDefinition, DockerHostDefinition } from '../docker-definition.js';
import type { LoadOf, ReplicaLoad } from '../load.js';
import type { LoadScraper } from '../routing/scraper.js';
import type { RoutingSettings } from '../../../config/index.js';
import type { ReplicaRouter } from '../routing/router.js';
import type { ReplicaState } from '../types.js';
import type { GpusBeingPlaced, HostState } from './hosts.js';
import type { ScaleStore } from './scale-store.js';
import { containerName, replicaAddress } from './spec.js';

export interface DockerEngineOptions {
  /** The client of the definition's `docker_host`; with `hosts`, `dockerFor` gives each host's. */
  docker: Docker;
  dockerFor?: (host: DockerHostDefinition) => Docker;
  /**
   * The shared replica count and scaling lease (PostgreSQL for the gateway); default: in this
   * process only.
   */
  scaleStore?: ScaleStore;
  /**
   * Replicas' scraped load (requests waiting); null for a replica never scraped, or with no
   * scraper.
   */
  loadOf?: LoadOf;
  log: Logger;
  /** The gateway's environment, for `env_from`. */
  env: Record<string, string | undefined>;
  /** How often containers are reconciled and replicas health-checked. */
  pollMs: number;
  /**
   * This gateway deployment's name (TOLLGATE_DEPLOYMENT): it touches only containers labelled with
   * it.
   */
  deployment: string;
  /**
   * Consecutive failed health checks before a ready replica is taken out (and failed listings
   * before a host is down).
   */
  unhealthyAfter?: number;
  /** A host's listing that takes longer counts as failed (default 10 s). */
  listTimeoutMs?: number;
  /** How replicas are chosen (TOLLGATE_ROUTING_*); absent: least-loaded, no metrics scraped. */
  routing?: RoutingSettings;
  /**
   * GPUs being placed, shared by the fleet's Docker engines (`startFleet`); default: this engine's
   * own.
   */
  placing?: GpusBeingPlaced;
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
  /** When it began draining: its removal waits for a scrape after this that shows it idle. */
  drainingSince?: number;
  /** The Docker host it runs on, and the GPU ids placed on it. */
  host: string;
  gpus: string[];
}

/** The autoscaler's memory between passes (see `autoscale.ts`). */
export interface AutoscaleState {
  /** Since when requests waiting per replica have been above the threshold; null while they are not. */
  busySince: number | null;
  /** Since when the engine could lose a replica; null while it could not. */
  idleSince: number | null;
  /** The step this process runs (holding the lease), until its replica is ready or removed. */
  step: { from: number; to: number; startedAt: number } | null;
  /** The count the timers were started for: a count changed elsewhere restarts them. */
  seenDesired: number;
  /** Requests waiting for a first replica (min_replicas 0). */
  coldWaiters: number;
  /**
   * Requests this gateway holds in its fair queue because the ready replicas are full (`flow/`):
   * waiting too.
   */
  gatewayWaiting: number;
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
  /** Autoscaling bounds (min = max: fixed). */
  bounds: { min: number; max: number };
  hosts: HostState[];
  /** GPUs placed and not yet listed, the fleet's (`DockerEngineOptions.placing`). */
  placing: GpusBeingPlaced;
  scaleStore: ScaleStore;
  /** This process's name as a lease holder. */
  holder: string;
  autoscale: AutoscaleState;
  replicas: Map<number, Replica>;
  /** Back-off per replica index: consecutive deaths, reset once it is ready. */
  restarts: Map<number, { count: number; notBefore: number }>;
  /** Replacements per replica index, for operators. */
  replaced: Map<number, number>;
  /** Turns among equally loaded replicas. */
  rotation: number;
  /**
   * Chooses among ready replicas (absent: least-loaded), and the scraper of their `/metrics` it
   * reads.
   */
  router?: ReplicaRouter;
  scraper?: LoadScraper;
  closed: boolean;
}

/** A replica's id in routing and status: `model/index`. */
export function replicaId(state: EngineState, replica: Replica): string {
  return `${state.definition.model}/${replica.index}`;
}

/**
 * Starts tracking a container as replica `index`, not yet in rotation (`starting` until /health
 * answers).
 */
export function trackReplica(
  state: EngineState,
  index: number,
  container: { id: string; name?: string; startedAt: number; host: DockerHostDefinition; gpus: string[] },
): Replica {
  const { definition, options } = state;
  const address = replicaAddress(definition, index, options.deployment, container.host);
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
    host: container.host.docker_host,
    gpus: container.gpus,
  };
  state.replicas.set(index, replica);
  return replica;
}

/**
 * A replica's scraped load: this engine's own scraper of replicas' `/metrics`
 * (routing on), else the one the fleet was given (`DockerEngineOptions.loadOf`);
 * null when neither has a fresh reading.
 */
export function scrapedLoad(state: EngineState, replica: Replica): ReplicaLoad | null {
  const id = replicaId(state, replica);
  return state.scraper?.loadOf(id) ?? state.options.loadOf?.(id) ?? null;
}

/**
 * Whether replicas' metrics are scraped at all: without, only this gateway's own requests are
 * known.
 */
export function loadsScraped(state: EngineState): boolean {
  return state.scraper !== undefined || state.options.loadOf !== undefined;
}
