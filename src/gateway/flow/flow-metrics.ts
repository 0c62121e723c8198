import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { FlowControl } from './flow-control.js';
import type { FlowEvents } from './flow-types.js';

/**
 * Waits in the gateway's queue, in seconds: from a step of an engine to the longest a request may
 * wait.
 */
const WAIT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * Flow control's metrics (docs/fair-sharing.md, docs/observability.md): the
 * waits of requests that queued, refusals for overload and clients that left
 * while waiting, counted as they happen; requests waiting, in flight, the
 * fleet's free slots and the tokens each organization was served, read from
 * the flow control when Prometheus scrapes. A request dispatched at once moves
 * nothing here: the request path pays nothing for them. `organization` labels
 * appear only with TOLLGATE_METRICS_ORG_LABEL=true (its cardinality is the
 * operator's choice); without them the figures are summed per band.
 *
 * @example
 * const events = flowMetrics(metrics.registry, () => flow, { orgLabel: false });
 */
// eslint-disable-next-line max-lines-per-function -- a declarative table: one metric each, with its help text
export function flowMetrics(registry: Registry, flow: () => FlowControl, options: { orgLabel: boolean }): FlowEvents {
  const registers = [registry];
  const org = options.orgLabel;
  const waited = new Histogram({
    name: 'tollgate_flow_wait_seconds',
    help: 'How long requests that found the fleet full waited in the gateway before they were dispatched, by band.',
    labelNames: ['band'] as const,
    buckets: WAIT_BUCKETS,
    registers,
  });
  const refused = new Counter({
    name: 'tollgate_flow_refused_total',
    help: 'Requests refused as overloaded: a queue bound reached (queue_full) or the longest wait passed (waited_too_long).',
    labelNames: ['band', 'reason'] as const,
    registers,
  });
  const left = new Counter({
    name: 'tollgate_flow_left_total',
    help: 'Requests whose client went away while they waited (nothing billed).',
    labelNames: ['band'] as const,
    registers,
  });
  new Gauge({
    name: 'tollgate_flow_waiting',
    help: 'Requests waiting in the gateway for room on their model, by band (and organization, with TOLLGATE_METRICS_ORG_LABEL).',
    labelNames: org ? (['model', 'band', 'organization'] as const) : (['model', 'band'] as const),
    registers,
    collect() {
      this.reset();
      for (const model of flow().snapshot().models) {
        for (const entry of model.waiting) {
          const labels = org
            ? { model: model.model, band: entry.band, organization: entry.orgId }
            : { model: model.model, band: entry.band };
          this.inc(labels, entry.requests);
        }
      }
    },
  });
  new Gauge({
    name: 'tollgate_flow_in_flight',
    help: "Requests this gateway has dispatched to a model's engines and not yet ended.",
    labelNames: ['model'] as const,
    registers,
    collect() {
      this.reset();
      for (const model of flow().snapshot().models) this.set({ model: model.model }, model.inFlight);
    },
  });
  new Gauge({
    name: 'tollgate_flow_free_slots',
    help: "Sequences a model's replicas could take beyond other gateways' requests (-1: unknown, nothing waits).",
    labelNames: ['model'] as const,
    registers,
    collect() {
      this.reset();
      for (const model of flow().snapshot().models) this.set({ model: model.model }, model.freeSlots ?? -1);
    },
  });
  new Gauge({
    name: 'tollgate_flow_tokens_served',
    help: 'Tokens the engines served each organization through this gateway since it started, by kind (prompt, completion).',
    labelNames: org ? (['kind', 'organization'] as const) : (['kind'] as const),
    registers,
    collect() {
      this.reset();
      for (const served of flow().snapshot().served) {
        const extra = org ? { organization: served.orgId } : {};
        this.inc({ kind: 'prompt', ...extra }, served.promptTokens);
        this.inc({ kind: 'completion', ...extra }, served.completionTokens);
      }
    },
  });
  return {
    dispatched(request, waitedMs) {
      if (waitedMs > 0) waited.observe({ band: request.band }, waitedMs / 1000);
    },
    refused(request, reason) {
      refused.inc({ band: request.band, reason });
    },
    left(request) {
      left.inc({ band: request.band });
    },
    served() {},
  };
}
