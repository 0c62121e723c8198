import type { LoadScraper } from './routing/scraper.js';
import type { Server } from './server-list.js';
import type { EngineStatus, EngineTenancy, UpstreamTarget } from './types.js';

// A server as a call and the status see it: the target a call is sent to (its in-flight count
// kept), and its line of the engine's status.

/** A call's target on `server`, counted in its in-flight calls until released. */
export function targetOf(
  server: Server,
  servedModelName: string,
  headers: Record<string, string>,
  routing: UpstreamTarget['routing'],
  tenancy: EngineTenancy,
): UpstreamTarget {
  server.inFlight += 1;
  server.served += 1;
  let released = false;
  return {
    baseUrl: `${server.url}/v1`,
    servedModelName,
    headers,
    engineKind: server.kind.current(),
    tenancy,
    replicaId: server.id,
    routing,
    release() {
      if (released) return;
      released = true;
      server.inFlight -= 1;
    },
    markFailed() {
      // Out of rotation at once; the next /health 200 brings it back.
      if (server.state === 'ready') server.state = 'unhealthy';
    },
  };
}

/** The engine's status: each server's state, its load as last scraped. */
export function serversStatus(model: string, servers: Map<string, Server>, scraper: LoadScraper | null): EngineStatus {
  const replicas = [...servers.values()].sort((a, b) => a.id.localeCompare(b.id));
  return {
    model,
    kind: 'static',
    desiredReplicas: replicas.length,
    dockerHost: null,
    minReplicas: replicas.length,
    maxReplicas: replicas.length,
    replicas: replicas.map((s) => {
      const load = scraper?.loadOf(s.id) ?? null;
      return {
        id: s.id,
        state: s.state,
        container: null,
        address: new URL(s.url).host,
        startedAt: new Date(s.since).toISOString(),
        uptimeSeconds: Math.floor((Date.now() - s.since) / 1000),
        inFlight: s.inFlight,
        served: s.served,
        restarts: 0,
        host: null,
        gpus: [],
        load: load && {
          waiting: load.waiting,
          running: load.running,
          kvCacheUsage: load.kvCacheUsage,
          prefixHitRate: load.prefixQueries ? (load.prefixHits ?? 0) / load.prefixQueries : null,
        },
      };
    }),
  };
}
