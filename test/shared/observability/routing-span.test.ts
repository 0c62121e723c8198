import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import type { RoutingDecision } from '../../../src/gateway/engines/routing/router.js';
import { startTracing } from '../../../src/shared/observability/tracing.js';

describe("the upstream span and the router's choice", () => {
  it('names the replica chosen and why: policy, every candidate’s scores, prefix blocks matched', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = await startTracing(
      { url: 'http://127.0.0.1:4318/v1/traces', serviceName: 'tollgate', sampler: 'always_on', samplerRatio: 1 },
      { exporter },
    );
    const routing: RoutingDecision = {
      replicaId: 'm/1',
      policy: 'scored',
      scores: {
        'm/0': { total: 2, queue: 1, kv: 1, prefix: 0, session: 0 },
        'm/1': { total: 5.5, queue: 1, kv: 0.5, prefix: 1, session: 0 },
      },
      prefixBlocks: { matched: 12, total: 12 },
    };
    const trace = tracing.begin('POST', '/v1/chat/completions', undefined, undefined, performance.now());
    trace.startUpstream(performance.now(), performance.now(), 'm');
    trace.upstreamAnswered('m/1', 'served', performance.now(), routing);
    trace.end({ route: '/v1/chat/completions', status: 200, errorType: '', model: 'm' }, performance.now());
    // The test's exporter gets each span as it ends (and forgets them on shutdown).
    const upstream = exporter.getFinishedSpans().find((span) => span.name === 'tollgate.upstream')!;
    await tracing.shutdown();
    expect(upstream.attributes).toMatchObject({
      'tollgate.engine.replica': 'm/1',
      'tollgate.routing.policy': 'scored',
      'tollgate.routing.prefix_blocks_matched': 12,
      'tollgate.routing.prefix_blocks': 12,
    });
    expect(JSON.parse(upstream.attributes['tollgate.routing.scores'] as string)).toEqual(routing.scores);
  });
});
