import { tenancyOf } from '../definition-fields.js';
import { ReplicaRouter } from '../routing/router.js';
import { LoadScraper } from '../routing/scraper.js';
import { slotsFor, withRoom } from '../routing/room.js';
import type { EngineStatus, RoutingHint, UpstreamTarget } from '../types.js';
import { type EngineState, type Replica, replicaId } from './state.js';

/**
 * Starts the engine's router when routing settings are given: the scraper
 * reads every ready replica's `/metrics` each `scrapeMs`, the router scores
 * on it (see ReplicaRouter). Round-robin and least-loaded need no metrics,
 * but the scraper still runs for operators' view of each replica's load.
 */
export function startRouting(state: EngineState): void {
  const settings = state.options.routing;
  if (!settings) return;
  const servedModel = state.definition.served_model_name ?? state.definition.model;
  const router = new ReplicaRouter(settings, null, state.definition.cache_sharing);
  const scraper = new LoadScraper({
    periodMs: settings.scrapeMs,
    targets: () => {
      const ready = [...state.replicas.values()]
        .filter((r) => r.state === 'ready')
        .map((r) => ({ id: replicaId(state, r), url: r.url, servedModel }));
      // Once a scrape period, the prefix index forgets replicas that are gone.
      router.retain(new Set(ready.map((t) => t.id)));
      return ready;
    },
    log: state.options.log,
    probeSlots: settings.probeSlots,
    inFlightOf: (id) => [...state.replicas.values()].find((r) => replicaId(state, r) === id)?.inFlight ?? 0,
  });
  router.useLoads(scraper);
  state.scraper = scraper;
  state.router = router;
  state.scraper.start();
}

/**
 * The ready replicas with their ids and this gateway's requests in flight on each
 * (`routing/room.ts`).
 */
function readyReplicas(state: EngineState): Array<{ id: string; inFlight: number; replica: Replica }> {
  return [...state.replicas.values()]
    .filter((r) => r.state === 'ready')
    .map((replica) => ({ id: replicaId(state, replica), inFlight: replica.inFlight, replica }));
}

/**
 * vLLM's --max-num-seqs as the definition's arguments give it; undefined: learnt from the replicas'
 * metrics.
 */
function batchSizeOf(state: EngineState): number | undefined {
  const args: unknown = state.definition.args;
  // A definition made in code (tests, a bench) may leave out the arguments the file's schema
  // defaults.
  if (!Array.isArray(args)) return undefined;
  const at = (args as string[]).findIndex((arg) => arg === '--max-num-seqs' || arg.startsWith('--max-num-seqs='));
  if (at < 0) return undefined;
  const flag = (args as string[])[at]!;
  const value = Number(flag.includes('=') ? flag.split('=')[1] : (args as string[])[at + 1]);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

/**
 * Sequences the engine's ready replicas can take beyond other gateways' requests
 * (`Engine.freeSlots`).
 */
export function freeSlotsOf(state: EngineState): number | null {
  return slotsFor(readyReplicas(state), batchSizeOf(state), state.scraper ?? null);
}

/**
 * A ready replica not among `exclude`, chosen by the engine's router (scores
 * on metrics and prefix affinity), or without one the fewest in flight (ties
 * take turns); null when none is ready. The target counts the request in
 * flight until it is released, and carries the router's reasons.
 */
export function acquireReplica(
  state: EngineState,
  exclude?: ReadonlySet<string>,
  hint?: RoutingHint,
): UpstreamTarget | null {
  const ready = withRoom(
    readyReplicas(state).filter((r) => !exclude?.has(r.id)),
    batchSizeOf(state),
    state.scraper ?? null,
    hint?.replica,
  ).map((r) => r.replica);
  if (ready.length === 0) return null;
  let replica: Replica;
  let routing: UpstreamTarget['routing'];
  if (state.router) {
    routing = state.router.choose(
      ready.map((r) => ({ id: replicaId(state, r), inFlight: r.inFlight })),
      hint,
    );
    replica = ready.find((r) => replicaId(state, r) === routing!.replicaId)!;
    state.options.log.debug('replica chosen', {
      model: state.definition.model,
      replica: routing.replicaId,
      policy: routing.policy,
      prefix: routing.prefixBlocks,
      scores: routing.scores,
    });
  } else {
    const fewest = Math.min(...ready.map((r) => r.inFlight));
    const candidates = ready.filter((r) => r.inFlight === fewest);
    replica = candidates[state.rotation++ % candidates.length]!;
  }
  replica.inFlight += 1;
  replica.served += 1;
  let released = false;
  return {
    baseUrl: `${replica.url}/v1`,
    servedModelName: state.definition.served_model_name ?? state.definition.model,
    headers: {},
    tenancy: tenancyOf(state.definition),
    replicaId: replicaId(state, replica),
    routing,
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

/**
 * The engine and its replicas, for operators (`tollgate engines list`, `/admin/v1/engines`): with
 * each replica's scraped load when routing scrapes it.
 */
export function engineStatus(state: EngineState): EngineStatus {
  return {
    model: state.definition.model,
    kind: 'docker',
    desiredReplicas: state.desired,
    dockerHost: state.hosts[0]!.definition.docker_host,
    minReplicas: state.bounds.min,
    maxReplicas: state.bounds.max,
    replicas: [...state.replicas.values()]
      .sort((a, b) => a.index - b.index)
      .map((r) => {
        const load = state.scraper?.loadOf(replicaId(state, r)) ?? null;
        return {
          id: replicaId(state, r),
          state: r.state,
          container: { id: r.containerId, name: r.name },
          address: r.url.replace(/^http:\/\//, ''),
          startedAt: new Date(r.startedAt).toISOString(),
          uptimeSeconds: Math.floor((Date.now() - r.startedAt) / 1000),
          inFlight: r.inFlight,
          served: r.served,
          restarts: state.replaced.get(r.index) ?? 0,
          host: r.host,
          gpus: r.gpus,
          load: load && {
            waiting: load.waiting,
            running: load.running,
            kvCacheUsage: load.kvCacheUsage,
            prefixHitRate: allTimeHitRate(load),
          },
        };
      }),
  };
}

// Operators read the replica's hit rate since it started: the rate between two scrapes is null
// whenever it is idle.
function allTimeHitRate(load: { prefixQueries?: number; prefixHits?: number }): number | null {
  return load.prefixQueries ? (load.prefixHits ?? 0) / load.prefixQueries : null;
}
