import { and, eq, sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmount } from '../../../src/gateway/billing/money.js';
import { ledgerEntries, usageRecords, wallets } from '../../../src/shared/db/schema.js';
import { expectError } from '../../helpers/envelope.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, redisAvailable, redisUrl, uniqueRedisPrefix } from '../../helpers/services.js';
import { sseData } from '../../helpers/sse.js';

const cacheStores = (await redisAvailable()) ? (['memory', 'redis'] as const) : (['memory'] as const);

describe.each(cacheStores)('response cache (%s)', (cacheStore) => {
  let gateway: TestGateway;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    // A small inter-token delay, so a client can leave while a stream is still generating.
    const env: Record<string, string> = { TOLLGATE_SIM_ITL_MS: '5' };
    if (cacheStore === 'redis') Object.assign(env, { REDIS_URL: redisUrl, TOLLGATE_REDIS_PREFIX: prefix });
    gateway = await startTestGateway('pglite', env);
  });
  afterAll(async () => {
    await gateway?.close();
    if (cacheStore === 'redis') await deleteRedisPrefix(prefix);
  });

  /**
   * The balance once this gateway's charges are written (they reach PostgreSQL just after each
   * answer).
   */
  const balanceAfterCharges = async (orgId: string) => {
    await gateway.services.applier.settled(5_000);
    return gateway.services.wallets.balance(orgId);
  };

  const post = (
    path: 'chat/completions' | 'embeddings',
    secret: string,
    body: Record<string, unknown> | string,
    signal?: AbortSignal,
  ) =>
    fetch(`${gateway.baseURL}/${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
      signal,
    });
  const chatBody = (content: string, extra: Record<string, unknown> = {}) => ({
    model: 'sim-chat',
    max_tokens: 8,
    messages: [{ role: 'user', content }],
    ...extra,
  });
  /**
   * The org's usage records once this gateway's charges are written (they reach PostgreSQL just
   * after each answer).
   */
  const recordsOf = async (orgId: string) => {
    await gateway.services.applier.settled(5_000);
    return gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, orgId));
  };
  const cacheTenant = () => gateway.tenant({ key: { responseCache: true } });

  /**
   * The organization's usage records once every call has ended and its charge is written: exactly
   * `count`.
   */
  async function recordsOnceCharged(orgId: string, count: number) {
    await gateway.charged();
    const records = await recordsOf(orgId);
    expect(records).toHaveLength(count);
    return records;
  }

  it('answers an identical JSON request from the cache: same body, free, recorded as a cache hit', async () => {
    const tenant = await cacheTenant();
    const body = chatBody('what is the capital of france');
    const first = await post('chat/completions', tenant.secret, body);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const firstText = await first.text();
    const afterMiss = await balanceAfterCharges(tenant.orgId);
    expect(afterMiss).toBeLessThan(parseAmount('5.00'));

    const second = await post('chat/completions', tenant.secret, body);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-tollgate-cache')).toBe('hit');
    expect(second.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await second.text()).toBe(firstText);
    // Each answer, the hit too, has a request id of its own.
    expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));

    expect(await balanceAfterCharges(tenant.orgId)).toBe(afterMiss);
    const records = await recordsOf(tenant.orgId);
    expect(records).toHaveLength(2);
    const hit = records.find((r) => r.id === second.headers.get('x-request-id'))!;
    const miss = records.find((r) => r.id === first.headers.get('x-request-id'))!;
    expect(miss).toMatchObject({ cacheHit: false, status: 200, streamed: false });
    expect(miss.cost).toBeGreaterThan(0n);
    expect(hit).toMatchObject({
      cacheHit: true,
      cost: 0n,
      status: 200,
      streamed: false,
      endpoint: 'chat.completions',
      keyId: tenant.keyId,
    });
    // The hit is recorded with the tokens of the answer it served.
    const usage = (JSON.parse(firstText) as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
    expect({ prompt: hit.promptTokens, completion: hit.completionTokens }).toEqual({
      prompt: usage.prompt_tokens,
      completion: usage.completion_tokens,
    });

    if (cacheStore === 'redis') {
      // The entry is in Redis, under the deployment's prefix and the organization.
      const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
      try {
        const [, keys] = await redis.scan('0', 'MATCH', `${prefix}cache:${tenant.orgId}:*`, 'COUNT', 1000);
        expect(keys.length).toBeGreaterThanOrEqual(1);
      } finally {
        redis.disconnect();
      }
    }
  });

  it('hits whatever the order of the keys of the body', async () => {
    const tenant = await cacheTenant();
    const first = await post(
      'chat/completions',
      tenant.secret,
      '{"model":"sim-chat","max_tokens":8,"temperature":0,"messages":[{"role":"user","content":"key order"}]}',
    );
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const firstText = await first.text();
    const second = await post(
      'chat/completions',
      tenant.secret,
      '{"messages":[{"content":"key order","role":"user"}],"temperature":0,"max_tokens":8,"model":"sim-chat"}',
    );
    expect(second.status).toBe(200);
    expect(second.headers.get('x-tollgate-cache')).toBe('hit');
    expect(await second.text()).toBe(firstText);
    // A different value is a different request.
    const other = await post('chat/completions', tenant.secret, chatBody('key order', { temperature: 0.5 }));
    expect(other.headers.get('x-tollgate-cache')).toBe('miss');
    await other.arrayBuffer();
  });

  it('caches a stream as a stream and replays it as SSE ending with [DONE]', async () => {
    const tenant = await cacheTenant();
    const body = chatBody('tell me a story', { stream: true });
    const first = await post('chat/completions', tenant.secret, body);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const original = sseData(await first.text());
    expect(original.at(-1)).toBe('[DONE]');
    expect(original.length).toBeGreaterThan(2);

    const second = await post('chat/completions', tenant.secret, body);
    expect(second.status).toBe(200);
    expect(second.headers.get('x-tollgate-cache')).toBe('hit');
    expect(second.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const replayed = sseData(await second.text());
    expect(replayed).toEqual(original);
    expect(replayed.filter((d) => d === '[DONE]')).toHaveLength(1);

    // The same messages without `stream` are another request, cached in their own form.
    const json = await post('chat/completions', tenant.secret, chatBody('tell me a story'));
    expect(json.headers.get('x-tollgate-cache')).toBe('miss');
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    await json.arrayBuffer();

    // The openai SDK reads the replay like any stream.
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions
      .create({
        model: 'sim-chat',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'tell me a story' }],
        stream: true,
      })
      .withResponse();
    expect(response.headers.get('x-tollgate-cache')).toBe('hit');
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    const expected = original
      .slice(0, -1)
      .map(
        (d) => (JSON.parse(d) as { choices: Array<{ delta: { content?: string } }> }).choices[0]?.delta.content ?? '',
      )
      .join('');
    expect(text.length).toBeGreaterThan(0);
    expect(text).toBe(expected);
    expect(finish).not.toBeNull();

    const records = await recordsOnceCharged(tenant.orgId, 4);
    expect(records.filter((r) => r.cacheHit)).toHaveLength(2);
    for (const hit of records.filter((r) => r.cacheHit))
      expect(hit).toMatchObject({ cost: 0n, streamed: true, status: 200 });
  });

  it('counts cache hits against no limit', async () => {
    const { secret } = await gateway.tenant({ key: { responseCache: true, requestsPerMinute: 2 } });
    const miss = await post('chat/completions', secret, chatBody('limited 1'));
    expect(miss.status).toBe(200);
    expect(miss.headers.get('x-tollgate-cache')).toBe('miss');
    expect(miss.headers.get('x-ratelimit-remaining')).toBe('1');
    await miss.arrayBuffer();
    for (let i = 0; i < 5; i++) {
      const hit = await post('chat/completions', secret, chatBody('limited 1'));
      expect(hit.status).toBe(200);
      expect(hit.headers.get('x-tollgate-cache')).toBe('hit');
      await hit.arrayBuffer();
    }
    const second = await post('chat/completions', secret, chatBody('limited 2'));
    expect(second.status).toBe(200);
    expect(second.headers.get('x-tollgate-cache')).toBe('miss');
    expect(second.headers.get('x-ratelimit-remaining')).toBe('0');
    await second.arrayBuffer();
    await expectError(
      await post('chat/completions', secret, chatBody('limited 3')),
      429,
      'rate_limit_exceeded',
      'rate_limit_error',
    );
    // A hit is still served once the key is out of requests.
    const hit = await post('chat/completions', secret, chatBody('limited 2'));
    expect(hit.status).toBe(200);
    expect(hit.headers.get('x-tollgate-cache')).toBe('hit');
  });

  it("never serves one organization's cache to another", async () => {
    const a = await cacheTenant();
    const b = await cacheTenant();
    const body = chatBody('shared question');
    const aFirst = await post('chat/completions', a.secret, body);
    expect(aFirst.headers.get('x-tollgate-cache')).toBe('miss');
    await aFirst.arrayBuffer();
    const aSecond = await post('chat/completions', a.secret, body);
    expect(aSecond.headers.get('x-tollgate-cache')).toBe('hit');
    await aSecond.arrayBuffer();

    const bFirst = await post('chat/completions', b.secret, body);
    expect(bFirst.status).toBe(200);
    expect(bFirst.headers.get('x-tollgate-cache')).toBe('miss');
    await bFirst.arrayBuffer();
    const bSecond = await post('chat/completions', b.secret, body);
    expect(bSecond.headers.get('x-tollgate-cache')).toBe('hit');
    await bSecond.arrayBuffer();
    // B paid for its own miss.
    expect((await recordsOf(b.orgId)).map((r) => r.cacheHit).sort()).toEqual([false, true]);
    expect(await balanceAfterCharges(b.orgId)).toBeLessThan(parseAmount('5.00'));
  });

  it('sends no cache header, and caches nothing, for a key with the cache off', async () => {
    const { secret, orgId } = await gateway.tenant();
    const body = chatBody('no cache for me');
    for (let i = 0; i < 2; i++) {
      const response = await post('chat/completions', secret, body);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-tollgate-cache')).toBeNull();
      await response.arrayBuffer();
    }
    const stream = await post('chat/completions', secret, chatBody('no cache for me', { stream: true }));
    expect(stream.headers.get('x-tollgate-cache')).toBeNull();
    await stream.text();
    const embedding = await post('embeddings', secret, { model: 'sim-embed', input: 'no cache' });
    expect(embedding.headers.get('x-tollgate-cache')).toBeNull();
    await embedding.arrayBuffer();
    const records = await recordsOnceCharged(orgId, 4);
    expect(records.every((r) => !r.cacheHit && r.cost > 0n)).toBe(true);
    // A key of the same organization with the cache on finds nothing the other key left.
    const { secret: cachingSecret } = await gateway.services.keys.create({
      orgId,
      name: 'caching',
      responseCache: true,
    });
    const response = await post('chat/completions', cachingSecret, body);
    expect(response.headers.get('x-tollgate-cache')).toBe('miss');
    await response.arrayBuffer();
  });

  it('does not cache a failed answer: engine errors, streams that fail midway or are abandoned', async () => {
    const tenant = await cacheTenant();
    const failing = chatBody('this fails', { sim_fail: '500' });
    for (let i = 0; i < 2; i++) {
      const response = await post('chat/completions', tenant.secret, failing);
      expect(response.headers.get('x-tollgate-cache')).not.toBe('hit');
      await expectError(response, 502, 'upstream_error', 'upstream_error');
    }

    const midstream = chatBody('this fails midway', { stream: true, sim_fail: 'midstream' });
    for (let i = 0; i < 2; i++) {
      const response = await post('chat/completions', tenant.secret, midstream);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-tollgate-cache')).toBe('miss');
      const data = sseData(await response.text());
      expect(data.at(-1)).toBe('[DONE]');
      expect(data.some((d) => d.includes('"error"'))).toBe(true);
    }

    const long = chatBody('this is abandoned', { stream: true, max_tokens: 200 });
    for (let i = 0; i < 2; i++) {
      const controller = new AbortController();
      const response = await post('chat/completions', tenant.secret, long, controller.signal);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-tollgate-cache')).toBe('miss');
      const reader = response.body!.getReader();
      await reader.read();
      controller.abort();
      await reader.cancel().catch(() => {});
      // The gateway settles the abandoned stream (status 499) before the retry.
      const records = await recordsOnceCharged(tenant.orgId, 2 + i + 1);
      expect(records.filter((r) => r.status === 499)).toHaveLength(i + 1);
    }
    const records = await recordsOf(tenant.orgId);
    expect(records.some((r) => r.cacheHit)).toBe(false);
  });

  it('caches embeddings too', async () => {
    const tenant = await cacheTenant();
    const body = { model: 'sim-embed', input: ['alpha beta', 'gamma'] };
    const first = await post('embeddings', tenant.secret, body);
    expect(first.status).toBe(200);
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    const firstText = await first.text();
    const balance = await balanceAfterCharges(tenant.orgId);
    const second = await post('embeddings', tenant.secret, { input: ['alpha beta', 'gamma'], model: 'sim-embed' });
    expect(second.status).toBe(200);
    expect(second.headers.get('x-tollgate-cache')).toBe('hit');
    expect(await second.text()).toBe(firstText);
    expect(await balanceAfterCharges(tenant.orgId)).toBe(balance);
    const records = await recordsOf(tenant.orgId);
    expect(records.find((r) => r.cacheHit)).toMatchObject({ cost: 0n, endpoint: 'embeddings', modelId: 'sim-embed' });
    // An embeddings answer is not served for a chat request with the same body, nor the reverse.
    const chat = await post('chat/completions', tenant.secret, chatBody('alpha beta'));
    expect(chat.headers.get('x-tollgate-cache')).toBe('miss');
    await chat.arrayBuffer();
  });

  it('keeps balances exact to the last unit after mixed JSON, stream, cached and aborted requests; the ledger sums to the balance', async () => {
    const credit = '2.00';
    const tenant = await gateway.tenant({ credit, key: { responseCache: true } });
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    let expectedRecords = 0;
    const chat = async (content: string) => {
      const { response } = await client.chat.completions
        .create({ model: 'sim-chat', max_tokens: 8, messages: [{ role: 'user', content }] })
        .withResponse();
      expectedRecords += 1;
      return response.headers.get('x-tollgate-cache');
    };
    const stream = async (content: string) => {
      const { data, response } = await client.chat.completions
        .create({ model: 'sim-reasoner', max_tokens: 12, stream: true, messages: [{ role: 'user', content }] })
        .withResponse();
      for await (const _ of data) void _;
      expectedRecords += 1;
      return response.headers.get('x-tollgate-cache');
    };
    const embed = async (input: string) => {
      const { response } = await client.embeddings.create({ model: 'sim-embed', input }).withResponse();
      expectedRecords += 1;
      return response.headers.get('x-tollgate-cache');
    };

    expect(await chat('mixed one')).toBe('miss');
    expect(await chat('mixed two')).toBe('miss');
    expect(await chat('mixed one')).toBe('hit');
    expect(await stream('mixed stream')).toBe('miss');
    expect(await stream('mixed stream')).toBe('hit');
    expect(await embed('mixed embedding')).toBe('miss');
    expect(await embed('mixed embedding')).toBe('hit');
    expect(await chat('mixed two')).toBe('hit');

    const controller = new AbortController();
    const aborted = await client.chat.completions.create(
      { model: 'sim-chat', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'mixed abandoned' }] },
      { signal: controller.signal },
    );
    let received = 0;
    for await (const chunk of aborted) {
      if (chunk.choices[0]?.delta.content) received += 1;
      if (received === 3) {
        controller.abort();
        break;
      }
    }
    expectedRecords += 1;
    expect(await stream('mixed stream 2')).toBe('miss');

    // The abandoned stream is charged when the gateway notices the client left.
    const records = await recordsOnceCharged(tenant.orgId, expectedRecords);
    expect(records).toHaveLength(expectedRecords);
    expect(records.filter((r) => r.cacheHit)).toHaveLength(4);
    for (const hit of records.filter((r) => r.cacheHit)) expect(hit.cost).toBe(0n);
    const abandoned = records.find((r) => r.status === 499)!;
    expect(abandoned.cost).toBeGreaterThan(0n);

    const spent = records.reduce((sum, r) => sum + r.cost, 0n);
    const [wallet] = await gateway.services.db.select().from(wallets).where(eq(wallets.orgId, tenant.orgId));
    expect(wallet!.balance).toBe(parseAmount(credit) - spent);
    expect((await gateway.services.gateKeeper.gate.walletState(tenant.orgId)).holds).toEqual([]);
    const [ledger] = await gateway.services.db
      .select({
        total: sql<string>`sum(${ledgerEntries.amount})::text`,
        charges: sql<number>`count(*) filter (where ${ledgerEntries.kind} = 'charge')::int`,
      })
      .from(ledgerEntries)
      .where(eq(ledgerEntries.orgId, tenant.orgId));
    expect(BigInt(ledger!.total)).toBe(wallet!.balance);
    // One charge per paid request; cache hits write none.
    expect(ledger!.charges).toBe(records.filter((r) => r.cost > 0n).length);
    const charged = await gateway.services.db
      .select({ requestId: ledgerEntries.requestId })
      .from(ledgerEntries)
      .where(and(eq(ledgerEntries.orgId, tenant.orgId), eq(ledgerEntries.kind, 'charge')));
    expect(charged.map((e) => e.requestId).sort()).toEqual(
      records
        .filter((r) => !r.cacheHit)
        .map((r) => r.id)
        .sort(),
    );
  });
});
