import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { scrape, type Scrape } from '../../helpers/prometheus.js';

// GET /metrics after known traffic, parsed with a Prometheus text-format parser: every counter and
// histogram count moves by exactly what was sent.

const CHAT = '/v1/chat/completions';
const EMBED = '/v1/embeddings';
const chatRequest = (content: string) => ({
  model: 'sim-chat',
  max_tokens: 8,
  messages: [{ role: 'user' as const, content }],
});

describe('GET /metrics after known traffic', () => {
  let gateway: TestGateway;
  const token = () => gateway.adminToken.token;
  const client = (secret: string) => new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
  const balanceAfterCharges = async (orgId: string) => {
    await gateway.services.applier.settled(5_000);
    return gateway.services.wallets.balance(orgId);
  };

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
  });
  afterAll(() => gateway?.close());

  it('is refused without the operator token, in the gateway envelope', async () => {
    const response = await fetch(`${gateway.url}/metrics`);
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { code: 'unauthorized' } });
  });

  it('counts JSON, stream, embeddings, a 429, a 402 and a cache hit exactly', async () => {
    const plain = await gateway.tenant();
    const limited = await gateway.tenant({ key: { requestsPerMinute: 1 } });
    const broke = await gateway.tenant({ credit: '0' });
    const cached = await gateway.tenant({ key: { responseCache: true } });
    const credits = await Promise.all([plain, limited, cached].map((t) => balanceAfterCharges(t.orgId)));
    const before = await scrape(`${gateway.url}/metrics`, token());

    const usages: Array<{ prompt_tokens: number; completion_tokens: number }> = [];
    const json = await client(plain.secret).chat.completions.create(chatRequest('one JSON answer'));
    usages.push(json.usage!);
    const stream = await client(plain.secret).chat.completions.create({
      ...chatRequest('one stream'),
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    const embedding = await client(plain.secret).embeddings.create({ model: 'sim-embed', input: ['a', 'b'] });
    usages.push({ prompt_tokens: embedding.usage.prompt_tokens, completion_tokens: 0 });
    const first = await client(limited.secret).chat.completions.create(chatRequest('allowed once'));
    usages.push(first.usage!);
    await expect(client(limited.secret).chat.completions.create(chatRequest('refused'))).rejects.toMatchObject({
      status: 429,
      code: 'rate_limit_exceeded',
    });
    await expect(client(broke.secret).chat.completions.create(chatRequest('no funds'))).rejects.toMatchObject({
      status: 402,
      code: 'insufficient_funds',
    });
    const miss = await client(cached.secret).chat.completions.create(chatRequest('cache me'));
    usages.push(miss.usage!);
    const hit = await client(cached.secret).chat.completions.create(chatRequest('cache me')).withResponse();
    expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit');

    const after = await scrape(`${gateway.url}/metrics`, token());
    const delta = (name: string, labels: Record<string, string> = {}) =>
      after.value(name, labels) - before.value(name, labels);
    const countDelta = (name: string, labels: Record<string, string>) =>
      after.count(name, labels) - before.count(name, labels);

    // Requests: 5 chat answers (JSON, stream, the limited key's first, the miss and the hit), 1
    // embedding, one 429, one 402.
    const requests = (route: string, model: string, status: string, code = '') =>
      delta('tollgate_requests_total', { route, model, status, code });
    expect(requests(CHAT, 'sim-chat', '200')).toBe(5);
    expect(requests(EMBED, 'sim-embed', '200')).toBe(1);
    expect(requests(CHAT, 'sim-chat', '429', 'rate_limit_exceeded')).toBe(1);
    expect(requests(CHAT, 'sim-chat', '402', 'insufficient_funds')).toBe(1);
    expect(delta('tollgate_rate_limited_total', { limit: 'requests' })).toBe(1);
    expect(delta('tollgate_insufficient_funds_total')).toBe(1);
    expect(delta('tollgate_cache_lookups_total', { result: 'hit' })).toBe(1);
    expect(delta('tollgate_cache_lookups_total', { result: 'miss' })).toBe(1);

    // Histograms: one duration per request, one time-to-first-token (the stream), one overhead per
    // call that reached an engine.
    expect(countDelta('tollgate_request_duration_seconds', { route: CHAT, model: 'sim-chat' })).toBe(7);
    expect(countDelta('tollgate_request_duration_seconds', { route: EMBED, model: 'sim-embed' })).toBe(1);
    expect(countDelta('tollgate_time_to_first_token_seconds', { model: 'sim-chat' })).toBe(1);
    expect(countDelta('tollgate_gateway_overhead_seconds', { route: CHAT })).toBe(4);
    expect(countDelta('tollgate_gateway_overhead_seconds', { route: EMBED })).toBe(1);

    // Tokens as the engine reported them to the clients (a cache hit is free and not counted);
    // spend as the wallets saw it.
    const chatUsages = [usages[0]!, usages[1]!, usages[3]!, usages[4]!];
    expect(delta('tollgate_tokens_total', { model: 'sim-chat', kind: 'prompt' })).toBe(
      chatUsages.reduce((sum, u) => sum + u.prompt_tokens, 0),
    );
    expect(delta('tollgate_tokens_total', { model: 'sim-chat', kind: 'completion' })).toBe(
      chatUsages.reduce((sum, u) => sum + u.completion_tokens, 0),
    );
    expect(delta('tollgate_tokens_total', { model: 'sim-embed', kind: 'prompt' })).toBe(usages[2]!.prompt_tokens);
    const spent = (await Promise.all([plain, limited, cached].map((t) => balanceAfterCharges(t.orgId)))).reduce(
      (sum, balance, i) => sum + (credits[i]! - balance),
      0n,
    );
    expect(spent).toBeGreaterThan(0n);
    const charged =
      delta('tollgate_charged_nanos_total', { model: 'sim-chat', currency: 'USD' }) +
      delta('tollgate_charged_nanos_total', { model: 'sim-embed', currency: 'USD' });
    expect(BigInt(charged)).toBe(spent);
  });

  it('buckets fit sub-millisecond overhead and multi-second generations', async () => {
    const now = await scrape(`${gateway.url}/metrics`, token());
    const bounds = (name: string) =>
      Object.keys(now.sample(name, now.series(name)[0]?.labels)?.buckets ?? {})
        .filter((le) => le !== '+Inf')
        .map(Number);
    expect(Math.min(...bounds('tollgate_gateway_overhead_seconds'))).toBeLessThanOrEqual(0.0001);
    expect(Math.min(...bounds('tollgate_request_duration_seconds'))).toBeLessThan(0.001);
    expect(Math.max(...bounds('tollgate_request_duration_seconds'))).toBeGreaterThanOrEqual(60);
    expect(Math.max(...bounds('tollgate_time_to_first_token_seconds'))).toBeGreaterThanOrEqual(10);
  });

  it('reports state: the fleet, holds, the charge spool, the database, draining, and Node process metrics', async () => {
    const now: Scrape = await scrape(`${gateway.url}/metrics`, token());
    for (const model of ['sim-chat', 'sim-embed']) {
      expect(now.value('tollgate_engine_replicas', { model, state: 'ready' })).toBe(1);
      expect(now.value('tollgate_engine_replicas', { model, state: 'unhealthy' })).toBe(0);
      const replicas = now.series('tollgate_engine_replica_in_flight').filter((m) => m.labels.model === model);
      expect(replicas).toHaveLength(1);
      expect((replicas[0] as { value: number }).value).toBe(0);
    }
    expect(now.value('tollgate_holds_outstanding')).toBe(0);
    expect(now.family('tollgate_charge_spool_depth').type).toBe('gauge');
    expect(now.value('tollgate_dependency_up', { dependency: 'database' })).toBe(1);
    // No REDIS_URL: no Redis series at all, rather than a Redis reported down.
    expect(now.sample('tollgate_dependency_up', { dependency: 'redis' })).toBeUndefined();
    expect(now.value('tollgate_draining')).toBe(0);
    expect(now.family('process_cpu_user_seconds_total').type).toBe('counter');
    expect(now.family('nodejs_eventloop_lag_seconds').type).toBe('gauge');
  });
});

describe('metrics settings', () => {
  it('TOLLGATE_METRICS_PORT serves /metrics there without a token, and not on the main port', async () => {
    const gateway = await startTestGateway('pglite', { TOLLGATE_METRICS_PORT: '0' });
    try {
      expect(gateway.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const { secret } = await gateway.tenant();
      await new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 }).embeddings.create({
        model: 'sim-embed',
        input: 'x',
      });
      const scraped = await scrape(gateway.metricsUrl!);
      expect(
        scraped.value('tollgate_requests_total', { route: EMBED, model: 'sim-embed', status: '200', code: '' }),
      ).toBe(1);
      const main = await fetch(`${gateway.url}/metrics`, {
        headers: { authorization: `Bearer ${gateway.adminToken.token}` },
      });
      expect(main.status).toBe(404);
      expect((await fetch(gateway.metricsUrl!.replace('/metrics', '/v1/models'))).status).toBe(404);
    } finally {
      await gateway.close();
    }
  });

  it('TOLLGATE_METRICS_ORG_LABEL=true labels tokens and spend with the organization', async () => {
    const gateway = await startTestGateway('pglite', { TOLLGATE_METRICS_ORG_LABEL: 'true' });
    try {
      const { secret, orgId } = await gateway.tenant();
      const answer = await new OpenAI({
        baseURL: gateway.baseURL,
        apiKey: secret,
        maxRetries: 0,
      }).chat.completions.create(chatRequest('whose tokens?'));
      const scraped = await scrape(`${gateway.url}/metrics`, gateway.adminToken.token);
      expect(
        scraped.value('tollgate_tokens_total', { model: 'sim-chat', organization: orgId, kind: 'completion' }),
      ).toBe(answer.usage!.completion_tokens);
      expect(
        scraped.value('tollgate_charged_nanos_total', { model: 'sim-chat', organization: orgId, currency: 'USD' }),
      ).toBeGreaterThan(0);
    } finally {
      await gateway.close();
    }
  });

  it('TOLLGATE_METRICS=off serves no /metrics and records nothing', async () => {
    const gateway = await startTestGateway('pglite', { TOLLGATE_METRICS: 'off' });
    try {
      const { secret } = await gateway.tenant();
      await new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 }).embeddings.create({
        model: 'sim-embed',
        input: 'x',
      });
      const response = await fetch(`${gateway.url}/metrics`, {
        headers: { authorization: `Bearer ${gateway.adminToken.token}` },
      });
      expect(response.status).toBe(404);
      expect(gateway.services.observer.active).toBe(false);
      expect(await gateway.services.metrics.registry.getSingleMetricAsString('tollgate_requests_total')).not.toMatch(
        /route=/,
      );
    } finally {
      await gateway.close();
    }
  });
});
