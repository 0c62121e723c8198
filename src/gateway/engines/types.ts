// The seam between the request path and whatever serves a model. Every engine
// kind (the built-in simulator, a static vLLM URL, Docker containers)
// implements `Engine`, in a file named for its kind: `simulator.ts`,
// `static.ts`, `docker/engine.ts`.

import type { EngineKind } from './kinds.js';
import type { ReplicaLoad } from './load.js';
import type { RoutingHint } from './routing/prompt-blocks.js';
import type { RoutingDecision } from './routing/router.js';

export type { RoutingHint } from './routing/prompt-blocks.js';

/**
 * How an engine treats the tenants that share it, from its definition: whose cached prompts a
 * request may reuse, and whether it schedules by priority. What the gateway sends beside each body
 * follows (`proxy/engine-fields.ts`).
 */
export interface EngineTenancy {
  cacheSharing: 'per-organization' | 'shared';
  schedulingPolicy: 'fcfs' | 'priority';
}

/** Where one request goes. `release` is called exactly once when the request ends. */
export interface UpstreamTarget {
  /** Base URL ending in `/v1`, e.g. `http://127.0.0.1:8000/v1`. Never shown to clients. */
  baseUrl: string;
  /** The name the engine serves the model under (vLLM's --served-model-name). */
  servedModelName: string;
  /** Extra headers for the upstream call, e.g. the engine's own API key. */
  headers: Record<string, string>;
  /**
   * Which server answers (docs/engines.md): what its usage counts, and how it counts a prompt.
   * Absent: vLLM.
   */
  engineKind?: EngineKind;
  /**
   * How its engine treats the tenants that share it; absent: each organization's cache apart, first
   * come first served.
   */
  tenancy?: EngineTenancy;
  /** Which replica this is, so a retry can go to another one. */
  replicaId: string;
  release(): void;
  /**
   * The replica failed before answering: take it out of rotation until its health check passes
   * again.
   */
  markFailed(): void;
  /**
   * Why this replica (Docker engines): the policy and each candidate's scores, for the trace span
   * and the debug log.
   */
  routing?: RoutingDecision;
}

export type ReplicaState = 'starting' | 'ready' | 'unhealthy' | 'draining';

/** One replica as the management API shows it to operators (never to clients). */
export interface ReplicaStatus {
  id: string;
  state: ReplicaState;
  container: { id: string; name: string } | null;
  address: string;
  /** When the replica (its container, for Docker) started, ISO 8601. */
  startedAt: string | null;
  uptimeSeconds: number | null;
  inFlight: number;
  /** Requests sent to it since the gateway started. */
  served: number;
  restarts: number;
  /**
   * Docker: the host it runs on (`docker_host`) and the GPU ids placed on it; others: null and
   * none.
   */
  host: string | null;
  gpus: string[];
  /**
   * What the replica's `/metrics` reported at the last scrape (Docker engines with routing
   * metrics); null when not scraped or stale.
   */
  load?: Pick<ReplicaLoad, 'waiting' | 'running' | 'kvCacheUsage' | 'prefixHitRate'> | null;
}

export interface EngineStatus {
  model: string;
  kind: Engine['kind'];
  /** Docker: the replicas asked for; others: 1. */
  desiredReplicas: number;
  /** Docker: the engine host; others: null. */
  dockerHost: string | null;
  /** Docker: the autoscaling bounds (equal: a fixed count); others: 1 and 1. */
  minReplicas: number;
  maxReplicas: number;
  replicas: ReplicaStatus[];
}

/** What a cold start's wait reads to stop early: an AbortSignal, or the request path's `CallAbort`. */
export interface AbortFlag {
  readonly aborted: boolean;
}

export interface Engine {
  readonly kind: 'simulator' | 'static' | 'docker';
  /** The catalog id this engine serves. */
  readonly modelId: string;
  /**
   * A target for one request, not among `exclude` (replica ids), or null when no replica is ready.
   * `hint` (the request's prompt) lets an engine with several replicas route on prefixes.
   */
  acquire(exclude?: ReadonlySet<string>, hint?: RoutingHint): UpstreamTarget | null;
  /**
   * Engines that scale to zero: a promise that settles when a replica is ready, the call is aborted
   * or the wait is over; null when there is no need to wait.
   */
  whenReady?(call?: AbortFlag): Promise<void> | null;
  status(): EngineStatus;
  /**
   * Sequences its ready replicas can take now beyond what other gateways run on them
   * (`routing/room.ts`): what flow control dispatches against. Null, or absent, when unknown:
   * nothing waits in the gateway for it.
   */
  freeSlots?(): number | null;
  /** Whether its replicas schedule by each request's priority (`scheduling_policy: priority`). */
  schedulesByPriority?(): boolean;
  /**
   * Requests this gateway holds for the model because its replicas are full: an autoscaler counts
   * them as waiting.
   */
  waitingInGateway?(count: number): void;
  /**
   * Docker engines only: change the number of replicas (scaling down drains first), or replace
   * every replica, one at a time, in the background.
   */
  scale?(replicas: number): Promise<void>;
  restart?(): Promise<void>;
  close(): Promise<void>;
}
