import { Counter, Registry } from 'prom-client';

/**
 * The gateway's Prometheus metrics, one registry per gateway (tests run
 * several in one process), served at `GET /metrics` to the operator.
 *
 * @example
 * const metrics = createMetrics();
 * metrics.usageOverBound.inc({ model: 'qwen' });
 * await metrics.registry.metrics(); // Prometheus text format
 */
export function createMetrics() {
  const registry = new Registry();
  return {
    registry,
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
