import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { repoRoot } from '../helpers/processes.js';
import { scrape } from '../helpers/prometheus.js';

// compose/grafana/dashboards/tollgate.json: every query is valid PromQL (parsed with Prometheus'
// own lezer grammar), and every metric it reads is one the gateway serves at /metrics or one vLLM
// exports.

/**
 * vLLM's metrics (V1 engine, vLLM 0.10 and later), as its production-metrics documentation lists
 * them.
 */
const VLLM_METRICS = new Set([
  'vllm:num_requests_running',
  'vllm:num_requests_waiting',
  'vllm:kv_cache_usage_perc',
  'vllm:prefix_cache_queries_total',
  'vllm:prefix_cache_hits_total',
  'vllm:prompt_tokens_total',
  'vllm:generation_tokens_total',
  'vllm:request_success_total',
  'vllm:num_preemptions_total',
  'vllm:time_to_first_token_seconds',
  'vllm:inter_token_latency_seconds',
  'vllm:e2e_request_latency_seconds',
  'vllm:request_queue_time_seconds',
  'vllm:request_prefill_time_seconds',
  'vllm:request_decode_time_seconds',
  'vllm:request_inference_time_seconds',
  'vllm:request_prompt_tokens',
  'vllm:request_generation_tokens',
  'vllm:iteration_tokens_total',
]);

interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { x: number; w: number };
  targets?: Array<{ expr: string; datasource?: { uid: string } }>;
}

const composeDir = path.join(repoRoot, 'compose');
const dashboard = JSON.parse(await readFile(path.join(composeDir, 'grafana/dashboards/tollgate.json'), 'utf8')) as {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; definition: string }> };
};
const queries = dashboard.panels.flatMap((panel) =>
  (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
);
queries.push(
  ...dashboard.templating.list.map((variable) => ({
    panel: `variable ${variable.name}`,
    expr: variable.definition.replace(/^label_values\((\w+), \w+\)$/, '$1'),
  })),
);

/**
 * Grafana's variables, replaced by values PromQL accepts, so the query parses as Prometheus will
 * see it.
 */
function asPromql(expr: string): string {
  return expr.replaceAll('$__rate_interval', '5m').replaceAll('$model', '.*');
}

/** The metric names a query selects, from its syntax tree; throws on a syntax error. */
function metricNames(expr: string): string[] {
  const names: string[] = [];
  const tree = parser.parse(expr);
  tree.iterate({
    enter(node) {
      if (node.type.isError) throw new Error(`not valid PromQL at ${node.from}: ${expr}`);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector')
        names.push(expr.slice(node.from, node.to));
    },
  });
  return names;
}

describe('the Grafana dashboard', () => {
  let gateway: TestGateway;
  let served: Set<string>;
  let histograms: Set<string>;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
    // One request, so Node's and the gateway's series all exist.
    const { secret } = await gateway.tenant();
    await new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 }).embeddings.create({
      model: 'sim-embed',
      input: 'x',
    });
    const scraped = await scrape(`${gateway.url}/metrics`, gateway.adminToken.token);
    served = new Set(Object.keys(scraped.metrics));
    histograms = new Set(
      Object.entries(scraped.metrics)
        .filter(([, family]) => family.type === 'histogram')
        .map(([name]) => name),
    );
  });
  afterAll(() => gateway?.close());

  it('has panels with queries, on the provisioned Prometheus data source', async () => {
    const provisioned = parse(
      await readFile(path.join(composeDir, 'grafana/provisioning/datasources/prometheus.yml'), 'utf8'),
    ) as { datasources: Array<{ uid: string }> };
    const uid = provisioned.datasources[0]!.uid;
    const graphs = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(graphs.length).toBeGreaterThanOrEqual(16);
    for (const panel of graphs) {
      expect(panel.datasource?.uid, panel.title).toBe(uid);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      expect(panel.gridPos.x + panel.gridPos.w, panel.title).toBeLessThanOrEqual(24);
    }
  });

  it('queries only metrics that exist: the gateway’s /metrics or vLLM’s', () => {
    const unknown: string[] = [];
    const used = new Set<string>();
    for (const { panel, expr } of queries) {
      for (const name of metricNames(asPromql(expr))) {
        used.add(name);
        const family = name.replace(/_(bucket|sum|count)$/, '');
        const known = name.startsWith('vllm:')
          ? VLLM_METRICS.has(name) || VLLM_METRICS.has(family)
          : served.has(name) || (name !== family && histograms.has(family));
        if (!known) unknown.push(`${panel}: ${name}`);
      }
    }
    expect(unknown).toEqual([]);
    // It shows traffic, latency, tokens, spend and the fleet: each from the gateway, and vLLM's
    // side too.
    for (const name of [
      'tollgate_requests_total',
      'tollgate_request_duration_seconds_bucket',
      'tollgate_time_to_first_token_seconds_bucket',
      'tollgate_tokens_total',
      'tollgate_charged_nanos_total',
      'tollgate_engine_replicas',
      'tollgate_engine_desired_replicas',
      'tollgate_engine_host_replicas',
      'vllm:num_requests_running',
      'vllm:kv_cache_usage_perc',
      'vllm:prefix_cache_hits_total',
    ]) {
      expect(used, name).toContain(name);
    }
  });

  it('would catch a misspelt metric', () => {
    expect(() => metricNames('sum(rate(tollgate_requests_total[5m]')).toThrow(/not valid PromQL/);
    expect(
      metricNames(
        asPromql('sum by (le) (rate(tollgate_request_duration_secnds_bucket{model=~"$model"}[$__rate_interval]))'),
      ),
    ).toEqual(['tollgate_request_duration_secnds_bucket']);
    expect(served.has('tollgate_request_duration_secnds')).toBe(false);
  });
});
