import type { Config } from './config/index.js';
import type { Database } from './shared/db/client.js';
import type { Logger } from './shared/http/log.js';
import { createMetrics, type Metrics } from './shared/observability/metrics.js';
import { Observer } from './shared/observability/observer.js';
import { createReadiness, type Readiness } from './server/readiness.js';
import { registerStateGauges } from './server/state-gauges.js';
import type { Tracing } from './shared/observability/tracing.js';
import { InFlight } from './shared/http/in-flight.js';
import { OutageLog } from './shared/http/outage.js';
import { RequestPathCache } from './gateway/catalog/request-path-cache.js';
import { FolderBlobStore } from './shared/blobs/folder-store.js';
import {
  createPeopleServices,
  createPlatformServices,
  type PeopleServices,
  type PlatformServices,
} from './control-plane-services.js';
import { createGatewayServices, type GatewayServices, type ServiceParts } from './gateway-services.js';

export type { PeopleServices, PlatformServices } from './control-plane-services.js';
export type { GatewayServices, ServiceParts } from './gateway-services.js';

/**
 * Everything the routes need, built once at start-up (`server/start.ts`) and passed in: no module
 * reaches for a global. Built in four groups; a surface names only what it reads
 * (`surfaces/<surface>/deps.ts`).
 */
export interface Services extends ProcessServices, GatewayServices, PeopleServices, PlatformServices {}

/** The process's own: settings, the store, the log, metrics and traces, readiness and drain. */
export interface ProcessServices {
  config: Config;
  db: Database;
  log: Logger;
  /** The operator token that guards the management API. */
  adminToken: string;
  /**
   * Prometheus metrics, served at GET /metrics (unless TOLLGATE_METRICS=off: then the request path
   * records none).
   */
  metrics: Metrics;
  /** Records requests into the metrics and traces (`observability/observer.ts`). */
  observer: Observer;
  /** Traces, when OTEL_EXPORTER_OTLP_ENDPOINT is set; see `observability/tracing.ts`. */
  tracing: Tracing | null;
  /** What `/health/ready` answers: database, Redis, engines, draining. */
  readiness: () => Promise<Readiness>;
  /** Billed calls under way, and whether the gateway is draining; see `server/start.ts` drain(). */
  inFlight: InFlight;
  /** Logs a database outage once when it starts and once when it ends. */
  storeOutage: OutageLog;
}

/**
 * Builds every service over one store; reports and exports on its own connections (`reportsDb`)
 * when given.
 *
 * @example
 * const services = createServices({ config, db: store.db, reportsDb: store.reports, log, fleet, adminToken });
 */
export function createServices(parts: ServiceParts): Services {
  const { config, db, log, fleet, adminToken, redis = null, journal, tracing = null } = parts;
  // One store for files and stacks' packages.
  const blobs = parts.blobs ?? new FolderBlobStore(null);
  const storeOutage = new OutageLog(
    log,
    'database',
    'known keys are still served; charges wait in the journal, and keys, models or wallets not yet cached answer 503, until it is back',
  );
  // An embedded store has no other writer: every change goes through this process, which drops the
  // cache itself.
  const requestPathCache = new RequestPathCache(db, storeOutage, {
    pollMs: config.databaseUrl ? config.catalogPollMs : 0,
  });
  // A write through this process drops its cache at once; other replicas see the catalog version
  // move.
  const catalogChanged = () => requestPathCache.invalidate();
  const inFlight = new InFlight();
  const metricsOn = config.observability.metrics;
  const metrics = createMetrics({ orgLabel: config.observability.orgLabel, processMetrics: metricsOn });
  if (metricsOn) registerStateGauges(metrics, { journal, inFlight, fleet, storeOutage, redis });
  const processServices: ProcessServices = {
    config,
    db,
    log,
    adminToken,
    metrics,
    observer: new Observer(metricsOn ? metrics : null, tracing, config.currency),
    tracing,
    readiness: createReadiness({ db, redis, fleet, inFlight }),
    inFlight,
    storeOutage,
  };
  return {
    ...processServices,
    ...createGatewayServices(
      { ...parts, blobs },
      requestPathCache,
      storeOutage,
      catalogChanged,
      metricsOn ? metrics : null,
    ),
    ...createPeopleServices(config, db, redis, catalogChanged),
    ...createPlatformServices(config, db, blobs, log),
  };
}
