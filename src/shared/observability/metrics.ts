import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { DeferredCounts } from './deferred-counts.js';

/**
 * Request durations, from sub-millisecond answers (a cache hit, a 429) to
 * multi-minute generations, in seconds.
 */
const DURATION_BUCKETS = [
  0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600,
];
/**
 * Time to first token, in seconds: a loaded engine answers in tens of milliseconds, a busy one in
 * seconds.
 */
const TTFT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** The gateway's own time on a request, in seconds: tens of microseconds when all is well. */
const OVERHEAD_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export interface MetricsOptions {
  /** Token and spend counters carry an `organization` label (TOLLGATE_METRICS_ORG_LABEL). */
  orgLabel?: boolean;
  /** Node's process metrics (CPU, memory, event loop, GC); off where nothing is served. */
  processMetrics?: boolean;
}

/**
 * The gateway's Prometheus metrics, one registry per gateway (tests run
 * several in one process), served at `GET /metrics` to the operator. The
 * request path records into them through `observability/observer.ts`; the
 * gauges of state (fleet, spool, dependencies) are read when scraped
 * (`server/state-gauges.ts`).
 *
 * @example
 * const metrics = createMetrics();
 * metrics.usageOverBound.inc({ model: 'qwen' });
 * await metrics.registry.metrics(); // Prometheus text format
 */
// eslint-disable-next-line max-lines-per-function -- a declarative table: one entry per metric, with its help text
export function createMetrics(options: MetricsOptions = {}) {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  const spendLabels = options.orgLabel ? (['model', 'organization'] as const) : (['model'] as const);
  // The three counters every request moves are counted in plain numbers and summed at scrape time.
  const requestCounts = new DeferredCounts<'route' | 'model' | 'status' | 'code'>();
  const tokenCounts = new DeferredCounts<'model' | 'organization' | 'kind'>();
  const chargedCounts = new DeferredCounts<'model' | 'organization' | 'currency'>();
  return {
    registry,
    orgLabel: options.orgLabel ?? false,
    requestCounts,
    tokenCounts,
    chargedCounts,
    requests: new Counter({
      name: 'tollgate_requests_total',
      help: 'Requests answered, by route (as registered), catalog model, HTTP status and error code ("" on success). A stream counts when it ends, with the status it was billed under (499 client gone, 502 engine failed).',
      labelNames: ['route', 'model', 'status', 'code'] as const,
      registers: [registry],
      collect() {
        requestCounts.flush(this);
      },
    }),
    requestDuration: new Histogram({
      name: 'tollgate_request_duration_seconds',
      help: 'Time from a request reaching the gateway to its last byte (a stream: to its end).',
      labelNames: ['route', 'model'] as const,
      buckets: DURATION_BUCKETS,
      registers: [registry],
    }),
    timeToFirstToken: new Histogram({
      name: 'tollgate_time_to_first_token_seconds',
      help: 'Streamed chat completions: time from the request reaching the gateway to the first generated token relayed.',
      labelNames: ['model'] as const,
      buckets: TTFT_BUCKETS,
      registers: [registry],
    }),
    overhead: new Histogram({
      name: 'tollgate_gateway_overhead_seconds',
      help: "The gateway's own time on a call that reached an engine: before the upstream call (key, limits, wallet hold) plus after the engine's last byte (usage, charge, limits settled).",
      labelNames: ['route'] as const,
      buckets: OVERHEAD_BUCKETS,
      registers: [registry],
    }),
    tokens: new Counter({
      name: 'tollgate_tokens_total',
      help: 'Tokens billed, by model and kind (prompt, completion); by organization too when TOLLGATE_METRICS_ORG_LABEL=true. Cache hits are free and not counted.',
      labelNames: [...spendLabels, 'kind'] as const,
      registers: [registry],
      collect() {
        tokenCounts.flush(this);
      },
    }),
    charged: new Counter({
      name: 'tollgate_charged_nanos_total',
      help: 'Amount charged to wallets, in billionths of the currency unit (exact up to 2^53 per series and process lifetime), by model (and organization with TOLLGATE_METRICS_ORG_LABEL=true).',
      labelNames: [...spendLabels, 'currency'] as const,
      registers: [registry],
      collect() {
        chargedCounts.flush(this);
      },
    }),
    rateLimited: new Counter({
      name: 'tollgate_rate_limited_total',
      help: 'Requests refused with 429, by the limit that refused them: requests, tokens, concurrency, monthly_tokens.',
      labelNames: ['limit'] as const,
      registers: [registry],
    }),
    insufficientFunds: new Counter({
      name: 'tollgate_insufficient_funds_total',
      help: 'Requests refused with 402: the wallet could not cover the most the request could cost.',
      registers: [registry],
    }),
    unavailable: new Counter({
      name: 'tollgate_unavailable_total',
      help: 'Requests answered 503, by cause: database, limits_store, no_price, engine.',
      labelNames: ['cause'] as const,
      registers: [registry],
    }),
    cacheLookups: new Counter({
      name: 'tollgate_cache_lookups_total',
      help: 'Response-cache lookups of keys with the cache on, by result (hit, miss).',
      labelNames: ['result'] as const,
      registers: [registry],
    }),
    usageOverBound: new Counter({
      name: 'tollgate_usage_over_bound_total',
      help: 'Requests whose engine reported more tokens than the request could use; each was charged at its bound.',
      labelNames: ['model'] as const,
      registers: [registry],
    }),
    tokensOverBound: new Counter({
      name: 'tollgate_usage_tokens_over_bound_total',
      help: 'Tokens an engine reported beyond what the request could use, and that were not charged.',
      labelNames: ['model', 'kind'] as const,
      registers: [registry],
    }),
    usageEstimated: new Counter({
      name: 'tollgate_usage_estimated_total',
      help: 'Requests billed from an estimate because the engine reported no valid usage (missing, negative or not an integer).',
      labelNames: ['model'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
