import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { RedisClient } from '../shared/db/redis.js';
import { resolveAdminToken, type AdminToken } from './admin-token.js';
import { createApp } from '../app.js';
import type { Config } from '../config/index.js';
import { ChargeJournal } from '../gateway/billing/journal.js';
import { openStore } from '../shared/db/client.js';
import { openRedis, redisReady } from '../shared/db/redis.js';
import { readEngineDefinitions, type SimulatorDefinition } from '../gateway/engines/definitions.js';
import { startFleet } from '../gateway/engines/fleet.js';
import type { LookupAll } from '../gateway/engines/server-list.js';
import { STORE_TIMEOUT_MS } from '../shared/db/timeout.js';
import { createLogger, describeError, type Logger } from '../shared/http/log.js';
import { type DemoSeed, seedDemo, storeIsEmpty } from './demo-seed.js';
import { loadShippedStacks } from '../platform/stacks/shipped.js';
import { openBlobStore } from '../shared/blobs/open.js';
import { createServices, type Services } from '../services.js';
import { startLoops } from './loops.js';
import { serveMetrics } from '../shared/observability/metrics-server.js';
import { startTracing } from '../shared/observability/tracing.js';
import type { HeapGrowth } from '../shared/heap-growth.js';
import type { SpanExporter } from '@opentelemetry/sdk-trace';

export interface RunningGateway {
  /** `http://127.0.0.1:PORT`, for clients on this machine. */
  url: string;
  port: number;
  services: Services;
  adminToken: AdminToken;
  /**
   * `http://127.0.0.1:PORT/metrics` when TOLLGATE_METRICS_PORT serves metrics on a port of their
   * own; else null.
   */
  metricsUrl: string | null;
  /** Set on the first start with an empty store (and TOLLGATE_SEED_DEMO on). */
  demo: DemoSeed | null;
  /**
   * The store had no organization when this process started (with the demo off, the start says what
   * to do next).
   */
  firstStart: boolean;
  /**
   * Shuts down without losing work (SIGTERM): stops accepting connections,
   * answers `/health` with 503, lets requests in flight finish for up to
   * `TOLLGATE_SHUTDOWN_GRACE_MS`, cuts what is still running after that (billed
   * for what it used, as a client leaving is), and waits until every call is
   * billed (journaled, and written to the store if it answers). Call `close()` after it.
   */
  drain(): Promise<void>;
  close(): Promise<void>;
}

export interface StartOptions {
  /** The environment, for engine definitions that name their API key's variable. */
  env?: Record<string, string | undefined>;
  log?: Logger;
  /**
   * With tracing configured, spans go here instead of to OTLP (tests: the SDK's
   * InMemorySpanExporter).
   */
  spanExporter?: SpanExporter;
  /** How `dns` engines resolve their names (tests: a resolver of their own). */
  lookup?: LookupAll;
  /**
   * The process's heap growth, when `setHeapGrowth` manages it (`npm start`); default: left to
   * node.
   */
  heapGrowth?: HeapGrowth;
}

/**
 * Builds every part from the config, opens the store (running migrations),
 * starts the engines and serves the app. Tests call it with port 0.
 *
 * @example
 * const gateway = await startGateway(loadConfig({ PORT: '0', TOLLGATE_DATA_DIR: 'memory://' }));
 * await gateway.close();
 */
export async function startGateway(config: Config, options: StartOptions = {}): Promise<RunningGateway> {
  const log = options.log ?? createLogger(config.logLevel);
  const definitions = await readEngineDefinitions(config.enginesFile);
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, reports: config.reports });
  const closers: Array<() => Promise<void>> = [() => store.close()];
  try {
    const adminToken = await resolveAdminToken(config.adminToken, config.dataDir);
    const fleet = await startFleet(definitions, {
      env: options.env ?? {},
      config,
      log,
      db: store.db,
      lookup: options.lookup,
    });
    closers.unshift(() => fleet.close());
    const redis = await connectRedis(config, log, closers);
    const journal = await openJournal(config, closers);
    const blobs = openBlobStore(config, store.db);
    closers.unshift(() => blobs.close());
    // Only when configured: a gateway without tracing never loads the SDK.
    const tracingSettings = config.observability.tracing;
    const tracing = tracingSettings ? await startTracing(tracingSettings, { exporter: options.spanExporter }) : null;
    if (tracing) closers.unshift(() => tracing.shutdown());
    const services = createServices({
      config,
      db: store.db,
      reportsDb: store.reports,
      log,
      fleet,
      adminToken: adminToken.token,
      redis,
      journal,
      blobs,
      tracing,
      heapGrowth: options.heapGrowth,
    });
    warnPendingCharges(journal, log);
    await startLoops(services, log, closers);
    closers.unshift(async () => services.flow.close());
    const simulated = definitions.filter((d): d is SimulatorDefinition => d.kind === 'simulator');
    // The global stacks shipped in stacks/ (read whole on a first start only:
    // `loadShippedStacks`); a broken one is logged, never a reason not to serve. Before the
    // listener: `npm start` takes its signals once this returns, so nothing may answer before.
    await loadShippedStacks(services.stacks, log).catch((error: unknown) =>
      log.error('shipped stacks not loaded', describeError(error)),
    );
    const firstStart = await storeIsEmpty(services);
    const demo = config.seedDemo && firstStart ? await seedDemo(services, simulated) : null;
    const server = await listen(createApp(services).fetch, config);
    closers.unshift(() => closeServer(server));
    const port = (server.address() as AddressInfo).port;
    const { metrics: metricsOn, metricsPort, metricsHost } = config.observability;
    const metricsServer =
      metricsOn && metricsPort !== null
        ? await serveMetrics(services.metrics.registry, metricsPort, metricsHost)
        : null;
    if (metricsServer) closers.unshift(() => metricsServer.close());
    log.info('gateway listening', {
      port,
      store: store.driver,
      limits: !config.limits.enabled ? 'off' : redis ? 'redis' : 'memory',
      engines: definitions.length,
    });
    return {
      url: `http://127.0.0.1:${port}`,
      port,
      services,
      adminToken,
      metricsUrl: metricsServer ? `http://127.0.0.1:${metricsServer.port}/metrics` : null,
      demo,
      firstStart,
      drain: () => drain(server, services),
      close: () => runAll(closers),
    };
  } catch (error) {
    await runAll(closers);
    throw error;
  }
}

/**
 * Redis when one is set (REDIS_URL, a cluster's nodes or sentinels; its quit among `closers`),
 * given a moment to answer; else null (the memory gate).
 */
async function connectRedis(
  config: Config,
  log: Logger,
  closers: Array<() => Promise<void>>,
): Promise<RedisClient | null> {
  if (!config.redis) return null;
  const redis = openRedis(config.redis, log);
  closers.unshift(() =>
    redis.quit().then(
      () => {},
      () => redis.disconnect(),
    ),
  );
  // Start even if Redis is down (limits answer 503 until it is back), but not before giving it a
  // moment.
  await redisReady(redis).catch((error: Error) =>
    log.error('redis not reachable at start-up', { detail: error.message }),
  );
  return redis;
}

/**
 * The charge journal, in the data folder (made if missing; none on disk for `memory://`), its close
 * among `closers`.
 */
async function openJournal(config: Config, closers: Array<() => Promise<void>>): Promise<ChargeJournal> {
  if (config.dataDir !== 'memory://') await mkdir(config.dataDir, { recursive: true });
  const journal = await ChargeJournal.open(
    config.dataDir === 'memory://' ? null : path.join(config.dataDir, 'charges.journal'),
  );
  closers.unshift(() => journal.close());
  return journal;
}

/**
 * How long an idle keep-alive connection is kept open: longer than clients and load balancers keep
 * theirs (60 s is the usual), so the gateway is never the side that closes a connection a client
 * is about to reuse (Node's default, 5 s, races a busy client: "other side closed").
 */
const KEEP_ALIVE_MS = 65_000;

function listen(fetch: Parameters<typeof serve>[0]['fetch'], config: Config): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: config.port, hostname: config.host }, () => resolve(server));
    if ('keepAliveTimeout' in server) {
      server.keepAliveTimeout = KEEP_ALIVE_MS;
      // Above the keep-alive time, as Node requires for a connection's next request's headers.
      server.headersTimeout = KEEP_ALIVE_MS + 1_000;
    }
    server.once('error', reject);
  });
}

/** How often a draining gateway closes keep-alive connections that have gone idle. */
const DRAIN_POLL_MS = 100;

async function drain(server: ServerType, services: Services): Promise<void> {
  const { inFlight, log, config } = services;
  if (inFlight.draining) return;
  inFlight.draining = true;
  // Requests waiting for room in the fleet are refused now (503, Retry-After): their clients retry
  // another replica.
  services.flow.close();
  log.info('draining: no new connections; requests in flight may finish', {
    inFlight: inFlight.size,
    graceMs: config.shutdownGraceMs,
  });
  const http = server as unknown as { closeIdleConnections(): void; closeAllConnections(): void };
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const idler = setInterval(() => http.closeIdleConnections(), DRAIN_POLL_MS);
  http.closeIdleConnections();
  const deadline = Date.now() + config.shutdownGraceMs;
  let timer: NodeJS.Timeout | undefined;
  const graceOver = new Promise<'grace over'>(
    (resolve) => (timer = setTimeout(() => resolve('grace over'), config.shutdownGraceMs)),
  );
  const outcome = await Promise.race([closed.then(() => 'closed' as const), graceOver]);
  clearTimeout(timer);
  clearInterval(idler);
  if (outcome === 'grace over') {
    log.warn('grace period over: cutting requests still in flight (each is billed for what it used)', {
      inFlight: inFlight.size,
    });
    http.closeAllConnections();
  }
  // Connections are gone; the calls they carried may still be writing their charges.
  const billed = await inFlight.idle(Math.max(0, deadline - Date.now()) + STORE_TIMEOUT_MS + 1_000);
  if (!billed) log.error('calls still unbilled at shutdown', { inFlight: inFlight.size });
  if (!(await services.applier.settled(STORE_TIMEOUT_MS))) {
    log.warn('charges left in the journal at shutdown: the next start writes them', {
      count: services.journal.pendingCount,
    });
  }
  log.info('drained', {});
}

function closeServer(server: ServerType): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Open keep-alive and streaming connections would hold close() for ever.
    (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
  });
}

async function runAll(closers: Array<() => Promise<void>>): Promise<void> {
  for (const close of closers) await close().catch(() => {});
}

/** Charges of an earlier run still in the journal: written by the applier, said once at start. */
function warnPendingCharges(journal: ChargeJournal, log: Logger): void {
  if (journal.pendingCount === 0) return;
  log.warn('charges from an earlier run are waiting to be written', {
    count: journal.pendingCount,
    streamsChargedFromCheckpoints: journal.recoveredStreams,
  });
}
