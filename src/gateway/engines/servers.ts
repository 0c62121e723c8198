import { lookup as dnsLookup } from 'node:dns/promises';
import type { Logger } from '../../shared/http/log.js';
import { tenancyOf } from './definition-fields.js';
import type { StaticDefinition } from './definitions.js';
import type { RoutingSettings } from '../../config/fleet-types.js';
import { ReplicaRouter } from './routing/router.js';
import { LoadScraper } from './routing/scraper.js';
import { slotsFor, withRoom } from './routing/room.js';
import { engineKindProbe } from './kinds.js';
import { staticHeaders } from './static.js';
import type { Engine, EngineStatus, EngineTenancy, ReplicaState, UpstreamTarget } from './types.js';

// The operator's own vLLM servers as one engine's replicas: a list of URLs,
// or a DNS name whose addresses are the replicas (a Kubernetes headless
// Service answers with every ready pod), re-resolved every `dnsRefreshMs`.
// Each replica gets what the gateway's Docker replicas get: a /health check
// before it takes traffic and after it fails, its /metrics scraped, the
// router's scores and prefix affinity, and failover to another replica.

/**
 * Every address a name resolves to now (dns.lookup with `all`, as getaddrinfo answers: /etc/hosts,
 * then DNS). Tests pass their own.
 */
export type LookupAll = (name: string) => Promise<string[]>;

export const systemLookup: LookupAll = async (name) =>
  (await dnsLookup(name, { all: true, verbatim: true })).map((entry) => entry.address);

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

interface Server {
  id: string;
  /** Without `/v1`: `http://10.0.0.5:8000`. */
  url: string;
  state: ReplicaState;
  failures: number;
  inFlight: number;
  served: number;
  since: number;
  /** Which server it is: the definition's `engine`, or found out once it answers. */
  kind: ReturnType<typeof engineKindProbe>;
}

const HEALTH_TIMEOUT_MS = 2_000;

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

/** The replicas' base URLs: the list as given, or one per address the name resolves to. */
async function serverUrls(definition: StaticDefinition, lookup: LookupAll): Promise<string[]> {
  if (definition.urls) return definition.urls.map(baseOf);
  const dns = definition.dns!;
  const addresses = await lookup(dns.name);
  return [...new Set(addresses)]
    .sort()
    .map((address) => `${dns.scheme}://${address.includes(':') ? `[${address}]` : address}:${dns.port}`);
}

/**
 * Adds the addresses that appeared (not in rotation until their /health answers) and drops the ones
 * that went.
 */
function syncServers(
  servers: Map<string, Server>,
  definition: StaticDefinition,
  urls: string[],
  log: Logger,
  headers: Record<string, string>,
): void {
  const wanted = new Set(urls.map((url) => `${definition.model}/${new URL(url).host}`));
  for (const [id] of servers) {
    if (wanted.has(id)) continue;
    servers.delete(id);
    log.info('engine server gone from the list; out of rotation', { model: definition.model, replica: id });
  }
  for (const url of urls) {
    const id = `${definition.model}/${new URL(url).host}`;
    if (servers.has(id)) continue;
    const kind = engineKindProbe(url, headers, definition.engine);
    servers.set(id, { id, url, state: 'starting', failures: 0, inFlight: 0, served: 0, since: Date.now(), kind });
    log.info('engine server found', { model: definition.model, replica: id });
  }
}

/**
 * A starting or unhealthy server enters rotation on a 200 from /health; a ready one leaves it after
 * `unhealthyAfter` failures in a row.
 */
async function checkServer(server: Server, model: string, options: ServersOptions): Promise<void> {
  const healthy = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) }).then(
    async (response) => {
      await response.body?.cancel();
      return response.status === 200;
    },
    () => false,
  );
  if (healthy) {
    server.failures = 0;
    server.kind.probe();
    if (server.state !== 'ready') {
      server.state = 'ready';
      server.since = Date.now();
      options.log.info('engine server ready', { model, replica: server.id });
    }
    return;
  }
  server.failures += 1;
  if (server.state === 'ready' && server.failures >= (options.unhealthyAfter ?? 3)) {
    server.state = 'unhealthy';
    options.log.warn('engine server stopped answering; out of rotation', { model, replica: server.id });
  }
}

function targetOf(
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

function serversStatus(model: string, servers: Map<string, Server>, scraper: LoadScraper | null): EngineStatus {
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

/** `http://host:8000`, `http://host:8000/` or `http://host:8000/v1`: the form without `/v1`. */
export function baseOf(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/v1$/, '');
}
