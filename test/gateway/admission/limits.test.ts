import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmount } from '../../../src/gateway/billing/money.js';
import { expectError } from '../../helpers/envelope.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, redisAvailable, redisUrl, uniqueRedisPrefix } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';
import { redisTopologiesMissing, startRedisCluster, type Topology } from '../../helpers/redis-topologies.js';
import { skippedWithout } from '../../helpers/skips.js';

// Issue 69: the same limits on a three-master Redis Cluster of its own
// (TOLLGATE_REDIS_CLUSTER_NODES).
const clusterMissing = redisTopologiesMissing();
skippedWithout(clusterMissing && `a Redis Cluster (${clusterMissing})`);
const limitStores = [
  'memory' as const,
  ...((await redisAvailable()) ? ['redis' as const] : []),
  ...(clusterMissing ? [] : ['redis-cluster' as const]),
];

describe.each(limitStores)('per-key limits (%s)', (limitStore) => {
  let gateway: TestGateway;
  const prefix = uniqueRedisPrefix();
  let cluster: (Topology & { nodes: Array<{ host: string; port: number }> }) | null = null;

  beforeAll(async () => {
    // Streams of 30 tokens at 20 ms each stay in flight for about 0.6 s.
    const env: Record<string, string> = { TOLLGATE_SIM_ITL_MS: '20' };
    if (limitStore === 'redis') Object.assign(env, { REDIS_URL: redisUrl, TOLLGATE_REDIS_PREFIX: prefix });
    if (limitStore === 'redis-cluster') {
      cluster = await startRedisCluster();
      const nodes = cluster.nodes.map((node) => `${node.host}:${node.port}`).join(',');
      Object.assign(env, { TOLLGATE_REDIS_CLUSTER_NODES: nodes });
    }
    gateway = await startTestGateway('pglite', env);
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    if (limitStore === 'redis') await deleteRedisPrefix(prefix);
    await cluster?.stop();
  });

  const chat = (secret: string, extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
    fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], ...extra }),
      signal,
    });
  const longStream = (secret: string, signal?: AbortSignal) =>
    chat(secret, { stream: true, max_tokens: 30, ignore_eos: true }, signal);

  it('allows 60 requests a minute by default, then 429 rate_limit_exceeded with the headers', async () => {
    const { secret } = await gateway.tenant();
    for (let i = 1; i <= 60; i++) {
      const response = await chat(secret);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBe('60');
      expect(response.headers.get('x-ratelimit-remaining')).toBe(String(60 - i));
      await response.arrayBuffer();
    }
    const refused = await chat(secret);
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('60');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    await expectError(refused, 429, 'rate_limit_exceeded', 'rate_limit_error');
  });

  it('takes an edit of the limit on the next request', async () => {
    const { secret, keyId } = await gateway.tenant({ key: { requestsPerMinute: 1 } });
    expect((await chat(secret)).status).toBe(200);
    await expectError(await chat(secret), 429, 'rate_limit_exceeded', 'rate_limit_error');
    await gateway.services.keys.update(keyId, { requestsPerMinute: 3 });
    const next = await chat(secret);
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-limit')).toBe('3');
  });

  it('allows 10 requests in flight by default: the 11th gets 429 concurrency_limit_exceeded', async () => {
    const { secret } = await gateway.tenant();
    const responses = await Promise.all(Array.from({ length: 11 }, () => longStream(secret)));
    const refused = responses.filter((r) => r.status === 429);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.headers.get('retry-after')).toBe('1');
    expect(refused[0]!.headers.get('x-ratelimit-limit')).toBe('10');
    await expectError(refused[0]!, 429, 'concurrency_limit_exceeded', 'rate_limit_error');
    await Promise.all(responses.filter((r) => r.status === 200).map((r) => r.text()));
  });

  it('frees the slots of streams the client abandons', async () => {
    const { secret } = await gateway.tenant({ key: { maxConcurrency: 2 } });
    const controllers = [new AbortController(), new AbortController()];
    const open = await Promise.all(controllers.map((c) => longStream(secret, c.signal)));
    expect(open.map((r) => r.status)).toEqual([200, 200]);
    await expectError(await longStream(secret), 429, 'concurrency_limit_exceeded', 'rate_limit_error');
    for (const controller of controllers) controller.abort();
    // The gateway notices the disconnect asynchronously: within a short while a slot is free again.
    await until(
      'a slot is free again',
      async () => {
        const response = await chat(secret);
        await response.arrayBuffer();
        return response.status === 200;
      },
      { timeout: 3_000 },
    );
  });

  it('frees the slot when the engine fails', async () => {
    const { secret } = await gateway.tenant({ key: { maxConcurrency: 1 } });
    for (let i = 0; i < 3; i++) expect((await chat(secret, { sim_fail: '500' })).status).toBe(502);
    expect((await chat(secret)).status).toBe(200);
  });

  it('checks tokens per minute against the estimate, then counts what was used', async () => {
    const { secret } = await gateway.tenant({ key: { tokensPerMinute: 100 } });
    const tooBig = await chat(secret, { max_tokens: 500 });
    expect(tooBig.headers.get('x-ratelimit-limit')).toBe('100');
    await expectError(tooBig, 429, 'tokens_limit_exceeded', 'rate_limit_error');
    let used = 0;
    let last: Response | undefined;
    for (let i = 0; i < 30; i++) {
      last = await chat(secret, { max_tokens: 10 });
      if (last.status !== 200) break;
      expect(last.headers.get('x-ratelimit-limit-tokens')).toBe('100');
      const body = (await last.json()) as { usage: { total_tokens: number } };
      used += body.usage.total_tokens;
    }
    // Refused once what was used plus the next estimate passes 100, not before.
    expect(used).toBeGreaterThan(100 - 20);
    expect(used).toBeLessThanOrEqual(100);
    await expectError(last!, 429, 'tokens_limit_exceeded', 'rate_limit_error');
  });

  it('refuses past the monthly token limit until next month, counting usage already recorded this month', async () => {
    const { secret, keyId, orgId } = await gateway.tenant({ key: { monthlyTokens: 500 } });
    // Usage recorded earlier this month (by another replica, or before a restart) counts too.
    await gateway.services.wallets.charge({
      id: `req_earlier_${keyId}`,
      orgId,
      keyId,
      projectId: null,
      modelId: 'sim-chat',
      endpoint: 'chat.completions',
      promptTokens: 480,
      completionTokens: 0,
      cost: parseAmount('0.000072'),
      status: 200,
      streamed: false,
      usageSource: 'upstream',
      latencyMs: 1,
      ttftMs: null,
    });
    const refused = await chat(secret, { max_tokens: 30 });
    const retryAfter = Number(refused.headers.get('retry-after'));
    const now = new Date();
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    expect(Math.abs(retryAfter - (nextMonth - now.getTime()) / 1000)).toBeLessThan(60);
    await expectError(refused, 429, 'monthly_quota_exceeded', 'rate_limit_error');
    expect((await chat(secret, { max_tokens: 2 })).status).toBe(200);
  });
});

describe('limits switched off', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway('pglite', { TOLLGATE_LIMITS: 'off' });
  });
  afterAll(() => gateway?.close());

  it('refuses nothing and sends no limit headers', async () => {
    const { secret } = await gateway.tenant({ key: { requestsPerMinute: 1 } });
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });
});
