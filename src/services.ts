import { CatalogService } from './catalog/service.js';
import type { Config } from './config.js';
import type { Database } from './db/client.js';
import type { Fleet } from './engines/fleet.js';
import type { Logger } from './http/log.js';
import { KeyService } from './keys/service.js';
import { createKeyLimiter, type KeyLimiter } from './limits/limiter.js';
import { keyTokensSince } from './billing/usage.js';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { ChargeSpool } from './billing/spool.js';
import { createResponseCache, type ResponseCache } from './cache/response-cache.js';
import { ChargeWriter } from './billing/charge-writer.js';
import { WalletService } from './billing/wallet.js';
import { OrgService } from './platform/orgs.js';
import { createMetrics, type Metrics } from './http/metrics.js';
import { InFlight } from './http/in-flight.js';
import { HoldLeases } from './billing/hold-leases.js';
import { OutageLog } from './http/outage.js';

/**
 * Everything the routes need, built once at start-up (see `gateway.ts`) and
 * passed in: no module reaches for a global.
 */
export interface Services {
  config: Config;
  db: Database;
  log: Logger;
  keys: KeyService;
  wallets: WalletService;
  /** Writes usage and charges in group commits; see `billing/charge-writer.ts`. */
  charges: ChargeWriter;
  orgs: OrgService;
  catalog: CatalogService;
  fleet: Fleet;
  /** The operator token that guards the management API. */
  adminToken: string;
  /** Per-key limits; null when TOLLGATE_LIMITS=off. */
  limiter: KeyLimiter | null;
  /** The per-key response cache, in Redis or in memory. */
  cache: ResponseCache;
  /** Charges waiting for an unreachable store. */
  spool: ChargeSpool;
  /** Prometheus counters, served at GET /metrics. */
  metrics: Metrics;
  /** Billed calls under way, and whether the gateway is draining; see `gateway.ts` drain(). */
  inFlight: InFlight;
  /** Renews the wallet holds of this process's requests while they run. */
  holdLeases: HoldLeases;
  /** Logs a database outage once when it starts and once when it ends. */
  storeOutage: OutageLog;
}

export interface ServiceParts {
  config: Config;
  db: Database;
  log: Logger;
  fleet: Fleet;
  adminToken: string;
  /** Where limits are counted; null: in this process (the embedded default). */
  redis?: Redis | null;
}

/**
 * Builds every service over one store.
 *
 * @example
 * const services = createServices({ config, db: store.db, log, fleet, adminToken });
 */
export function createServices({ config, db, log, fleet, adminToken, redis = null }: ServiceParts): Services {
  const wallets = new WalletService(db);
  return {
    config,
    db,
    log,
    keys: new KeyService(db, config.keyPrefix),
    wallets,
    charges: new ChargeWriter(wallets, log),
    orgs: new OrgService(db),
    catalog: new CatalogService(db),
    fleet,
    adminToken,
    limiter: config.limits.enabled
      ? createKeyLimiter({
          redis,
          prefix: config.limits.redisPrefix,
          concurrencyLeaseMs: config.limits.concurrencyLeaseMs,
          monthToDate: (keyId, monthStart) => keyTokensSince(db, keyId, monthStart),
        })
      : null,
    cache: createResponseCache({ redis, prefix: config.limits.redisPrefix, ...config.cache }),
    metrics: createMetrics(),
    inFlight: new InFlight(),
    storeOutage: new OutageLog(log, 'database', 'billed requests answer 503 billing_unavailable and charges wait in the spool until it is back'),
    // A request never runs past its upstream timeout; a little more covers its charge.
    holdLeases: new HoldLeases(wallets, log, { leaseMs: config.holdLeaseMs, maxHoldMs: config.upstreamTimeoutMs + 60_000 }),
    spool: new ChargeSpool(wallets, config.dataDir === 'memory://' ? null : path.join(config.dataDir, 'unwritten-charges.jsonl'), log),
  };
}
