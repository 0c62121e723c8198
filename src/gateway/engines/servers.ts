import type { Logger } from '../../shared/http/log.js';
import { tenancyOf } from './definition-fields.js';
import type { StaticDefinition } from './definitions.js';
import type { RoutingSettings } from '../../config/fleet-types.js';
import { ReplicaRouter } from './routing/router.js';
import { LoadScraper } from './routing/scraper.js';
import { slotsFor, withRoom } from './routing/room.js';
import { checkServer } from './server-health.js';
import { type LookupAll, type Server, serverUrls, syncServers, systemLookup } from './server-list.js';
import { serversStatus, targetOf } from './server-views.js';
import { staticHeaders } from './static.js';
import type { Engine, UpstreamTarget } from './types.js';

// The operator's own vLLM servers as one engine's replicas: a list of URLs,
// or a DNS name whose addresses are the replicas (a Kubernetes headless
// Service answers with every ready pod), re-resolved every `dnsRefreshMs`.
// Each replica gets what the gateway's Docker replicas get: a /health check
// before it takes traffic and after it fails, its /metrics scraped, the
// router's scores and prefix affinity, and failover to another replica.

export interface ServersOptions {
  env: Record<string, string | undefined>;
  log: Logger;
  /** TOLLGATE_ENGINE_POLL_MS: how often each replica's /health is asked. */
  pollMs: number;
  /** TOLLGATE_ENGINE_DNS_REFRESH_MS: how often a `dns` engine's name is resolved again. */
  dnsRefreshMs: number;
  routing?: RoutingSettings;
  lookup?: LookupAll;
  /** Failed health checks in a row before a ready replica leaves rotation (3). */
  unhealthyAfter?: number;
}

/**
 * Starts the engine: resolves its replicas and checks each once before
 * answering, so a gateway that starts beside healthy servers serves at once.
 *
 * @example
 * const engine = await startServersEngine({ kind: 'static', model: 'qwen', dns: { name: 'vllm.ml.svc.cluster.local', port: 8000 } }, options);
 */
export async function startServersEngine(definition: StaticDefinition, options: ServersOptions): Promise<Engine> {
  const servers = new Map<string, Server>();
  const servedModel = definition.served_model_name ?? definition.model;
  const headers = staticHeaders(definition, options.env);
  const router = options.routing ? new ReplicaRouter(options.routing, null, definition.cache_sharing) : null;
  const ready = () => [...servers.values()].filter((s) => s.state === 'ready');
  const scraper = router && serversScraper(servers, router, servedModel, options);
  if (router && scraper) router.useLoads(scraper);
  const capacity = definition.max_num_seqs;
  const refresh = async () =>
    syncServers(
      servers,
      definition,
      await serverUrls(definition, options.lookup ?? systemLookup),
      options.log,
      headers,
    );
  const check = () =>
    Promise.all([...servers.values()].map((server) => checkServer(server, definition.model, options)));
  await refresh().catch((error: unknown) =>
    options.log.error('engine servers not resolved', { model: definition.model, detail: (error as Error).message }),
  );
  await check();
  scraper?.start();
  const timers = [setInterval(() => void check(), options.pollMs)];
  if (definition.dns) {
    // A name that does not resolve for a while keeps the replicas it had: a DNS outage is not a
    // fleet outage.
    timers.push(
      setInterval(
        () =>
          void refresh().catch((error: unknown) =>
            options.log.warn('engine servers not resolved again', {
              model: definition.model,
              detail: (error as Error).message,
            }),
          ),
        options.dnsRefreshMs,
      ),
    );
  }
  for (const timer of timers) timer.unref();
  let rotation = 0;
  return {
    kind: 'static',
    modelId: definition.model,
    acquire(exclude, hint) {
      const candidates = withRoom(
        ready().filter((s) => !exclude?.has(s.id)),
        capacity,
        scraper,
        hint?.replica,
      );
      if (candidates.length === 0) return null;
      let routing: UpstreamTarget['routing'];
      let server: Server;
      if (router) {
        routing = router.choose(
          candidates.map((s) => ({ id: s.id, inFlight: s.inFlight })),
          hint,
        );
        server = candidates.find((s) => s.id === routing!.replicaId)!;
      } else {
        const fewest = Math.min(...candidates.map((s) => s.inFlight));
        const tied = candidates.filter((s) => s.inFlight === fewest);
        server = tied[rotation++ % tied.length]!;
      }
      return targetOf(server, servedModel, headers, routing, tenancyOf(definition));
    },
    freeSlots: () => slotsFor(ready(), capacity, scraper),
    schedulesByPriority: () => tenancyOf(definition).schedulingPolicy === 'priority',
    status: () => serversStatus(definition.model, servers, scraper),
    async close() {
      for (const timer of timers) clearInterval(timer);
      scraper?.stop();
    },
  };
}

/**
 * Scrapes the ready servers' metrics for the router and for flow control's room
 * (`routing/room.ts`).
 */
function serversScraper(
  servers: Map<string, Server>,
  router: ReplicaRouter,
  servedModel: string,
  options: ServersOptions,
): LoadScraper {
  return new LoadScraper({
    periodMs: options.routing!.scrapeMs,
    targets: () => {
      const targets = [...servers.values()]
        .filter((s) => s.state === 'ready')
        .map((s) => ({ id: s.id, url: s.url, servedModel }));
      router.retain(new Set(targets.map((t) => t.id)));
      return targets;
    },
    log: options.log,
    inFlightOf: (id) => servers.get(id)?.inFlight ?? 0,
    probeSlots: options.routing!.probeSlots,
  });
}
