import { mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { resolveAdminToken, type AdminToken } from './admin-token.js';
import { createApp } from './app.js';
import type { Config } from './config.js';
import { purgeRequestData } from './billing/request-data.js';
import { openStore } from './db/client.js';
import { openRedis, redisReady } from './db/redis.js';
import { readEngineDefinitions, type SimulatorDefinition } from './engines/definitions.js';
import { startFleet } from './engines/fleet.js';
import { createLogger, type Logger } from './http/log.js';
import { type DemoSeed, seedDemo } from './seed.js';
import { createServices, type Services } from './services.js';

const SWEEP_INTERVAL_MS = 60_000;

export interface RunningGateway {
  /** `http://127.0.0.1:PORT`, for clients on this machine. */
  url: string;
  port: number;
  services: Services;
  adminToken: AdminToken;
  /** Set on the first start with an empty store (and TOLLGATE_SEED_DEMO on). */
  demo: DemoSeed | null;
  close(): Promise<void>;
}

export interface StartOptions {
  /** The environment, for engine definitions that name their API key's variable. */
  env?: Record<string, string | undefined>;
  log?: Logger;
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
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const closers: Array<() => Promise<void>> = [() => store.close()];
  try {
    const adminToken = await resolveAdminToken(config.adminToken, config.dataDir);
    const fleet = await startFleet(definitions, { env: options.env ?? {}, config, log });
    closers.unshift(() => fleet.close());
    const redis = config.redisUrl ? openRedis(config.redisUrl, log) : null;
    if (redis) {
      closers.unshift(() => redis.quit().then(() => {}, () => redis.disconnect()));
      // Start even if Redis is down (limits answer 503 until it is back), but not before giving it a moment.
      await redisReady(redis).catch((error: Error) => log.error('redis not reachable at start-up', { detail: error.message }));
    }
    if (config.dataDir !== 'memory://') await mkdir(config.dataDir, { recursive: true });
    const services = createServices({ config, db: store.db, log, fleet, adminToken: adminToken.token, redis });
    await services.spool.load();
    closers.unshift(async () => services.spool.stop());
    // Holds left by a gateway that died expire, and stored bodies outlive their retention; any replica may clean up.
    const sweeper = setInterval(() => {
      services.wallets.sweepExpiredHolds().then(
        (swept) => swept > 0 && log.warn('expired wallet holds given back', { organizations: swept }),
        (error: unknown) => log.warn('sweeping expired holds failed', { detail: (error as Error).message }),
      );
      purgeRequestData(store.db, config.requestData.retentionDays).catch((error: unknown) =>
        log.warn('purging old request data failed', { detail: (error as Error).message }),
      );
    }, SWEEP_INTERVAL_MS);
    sweeper.unref();
    closers.unshift(async () => clearInterval(sweeper));
    const simulated = definitions.filter((d): d is SimulatorDefinition => d.kind === 'simulator');
    const demo = config.seedDemo ? await seedDemo(services, simulated) : null;
    const server = await listen(createApp(services).fetch, config);
    closers.unshift(() => closeServer(server));
    const port = (server.address() as AddressInfo).port;
    log.info('gateway listening', { port, store: store.driver, limits: !config.limits.enabled ? 'off' : redis ? 'redis' : 'memory', engines: definitions.length });
    return {
      url: `http://127.0.0.1:${port}`,
      port,
      services,
      adminToken,
      demo,
      close: () => runAll(closers),
    };
  } catch (error) {
    await runAll(closers);
    throw error;
  }
}

function listen(fetch: Parameters<typeof serve>[0]['fetch'], config: Config): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: config.port, hostname: config.host }, () => resolve(server));
    server.once('error', reject);
  });
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
