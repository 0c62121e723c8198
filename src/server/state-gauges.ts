import type { RedisClient } from '../shared/db/redis.js';
import { Gauge } from 'prom-client';
import type { ChargeJournal } from '../gateway/billing/journal.js';
import { redisAnswers } from '../shared/db/redis.js';
import type { Fleet } from '../gateway/engines/fleet.js';
import type { ReplicaState } from '../gateway/engines/types.js';
import type { InFlight } from '../shared/http/in-flight.js';
import type { OutageLog } from '../shared/http/outage.js';
import type { Metrics } from '../shared/observability/metrics.js';

/** Where the gauges of state read from, when Prometheus scrapes. */
export interface StateSources {
  journal: ChargeJournal;
  inFlight: InFlight;
  fleet: Fleet;
  storeOutage: OutageLog;
  /** null: no REDIS_URL (limits and cache in this process); the gauge then says nothing about Redis. */
  redis: RedisClient | null;
}

const REPLICA_STATES: readonly ReplicaState[] = ['starting', 'ready', 'unhealthy', 'draining'];

/**
 * Gauges of the gateway's state, read at scrape time (nothing on the request
 * path): billed calls holding funds, the charge spool, Redis and PostgreSQL
 * availability, draining, and the fleet's replicas by state with the requests
 * in flight on each.
 *
 * @example
 * registerStateGauges(metrics, { journal, inFlight, fleet, storeOutage, redis });
 */
// eslint-disable-next-line max-lines-per-function -- a declarative table: one gauge per piece of state, with its help text
export function registerStateGauges(metrics: Metrics, sources: StateSources): void {
  const registers = [metrics.registry];
  new Gauge({
    name: 'tollgate_holds_outstanding',
    help: 'Billed calls of this process holding a wallet hold and limits (from admission to charge).',
    registers,
    collect() {
      this.set(sources.inFlight.size);
    },
  });
  new Gauge({
    name: 'tollgate_charge_spool_depth',
    help: 'Charges journaled (durable on disk) and not yet written to PostgreSQL; grows while the database is away.',
    registers,
    collect() {
      this.set(sources.journal.pendingCount);
    },
  });
  new Gauge({
    name: 'tollgate_dependency_up',
    help: 'Whether a store answers, as the request path last saw it: 1 up, 0 down (database: PostgreSQL or PGlite; redis: only with REDIS_URL).',
    labelNames: ['dependency'] as const,
    registers,
    collect() {
      this.set({ dependency: 'database' }, sources.storeOutage.isDown ? 0 : 1);
      if (sources.redis) this.set({ dependency: 'redis' }, redisAnswers(sources.redis) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'tollgate_draining',
    help: '1 while the gateway drains on SIGTERM (it takes no new work), else 0.',
    registers,
    collect() {
      this.set(sources.inFlight.draining ? 1 : 0);
    },
  });
  new Gauge({
    name: 'tollgate_engine_replicas',
    help: "Engine replicas by model and state (starting, ready, unhealthy, draining), from the gateway's fleet.",
    labelNames: ['model', 'state'] as const,
    registers,
    collect() {
      this.reset();
      for (const engine of sources.fleet.status()) {
        for (const state of REPLICA_STATES)
          this.set({ model: engine.model, state }, engine.replicas.filter((r) => r.state === state).length);
      }
    },
  });
  new Gauge({
    name: 'tollgate_engine_host_replicas',
    help: 'Engine replicas (any state) by model and Docker host they were placed on.',
    labelNames: ['model', 'host'] as const,
    registers,
    collect() {
      // Hosts come and go with placement: a host with none of a model's replicas has no series.
      this.reset();
      for (const engine of sources.fleet.status()) {
        const byHost = new Map<string, number>();
        for (const replica of engine.replicas)
          if (replica.host) byHost.set(replica.host, (byHost.get(replica.host) ?? 0) + 1);
        for (const [host, count] of byHost) this.set({ model: engine.model, host }, count);
      }
    },
  });
  new Gauge({
    name: 'tollgate_engine_desired_replicas',
    help: 'Replicas each engine is asked to run (fixed, set by an operator, or by the autoscaler), with its bounds.',
    labelNames: ['model', 'bound'] as const,
    registers,
    collect() {
      this.reset();
      for (const engine of sources.fleet.status()) {
        this.set({ model: engine.model, bound: 'desired' }, engine.desiredReplicas);
        this.set({ model: engine.model, bound: 'min' }, engine.minReplicas);
        this.set({ model: engine.model, bound: 'max' }, engine.maxReplicas);
      }
    },
  });
  new Gauge({
    name: 'tollgate_engine_replica_in_flight',
    help: 'Requests this gateway has in flight on each engine replica.',
    labelNames: ['model', 'replica'] as const,
    registers,
    collect() {
      // Replicas come and go (scaling, restarts): a gone replica's series goes with it.
      this.reset();
      for (const engine of sources.fleet.status()) {
        for (const replica of engine.replicas) this.set({ model: engine.model, replica: replica.id }, replica.inFlight);
      }
    },
  });
}
