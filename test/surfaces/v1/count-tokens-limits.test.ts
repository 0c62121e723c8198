import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { limitsEnv, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, redisAvailable, uniqueRedisPrefix } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

/**
 * Issue 68, item 1: `/v1/messages/count_tokens` counts against its key's requests per minute and
 * concurrency, taken before its body is read, and reads at most
 * TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES. Before, a key of 5 requests a minute and concurrency 2 got
 * 12 of 12 parallel counts, and a flood of 4 MB bodies was parsed whole each time. A count costs
 * nothing, so a budget of 0 does not refuse it (docs/errors-and-limits.md).
 */
const kinds = (await redisAvailable()) ? (['memory', 'redis'] as const) : (['memory'] as const);

const BODY = { model: 'sim-chat', messages: [{ role: 'user', content: 'how many tokens is this?' }] };

describe.each(kinds)('count_tokens within the key limits (%s)', (kind) => {
  let gateway: TestGateway;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', limitsEnv(kind, prefix));
  });
  afterAll(async () => {
    await gateway?.close();
    if (kind === 'redis') await deleteRedisPrefix(prefix);
  });

  const count = (secret: string, body: unknown = BODY) =>
    fetch(`${gateway.baseURL}/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  it('a key of 5 requests a minute and concurrency 2: 12 parallel counts get at most 5 answers, the rest 429', async () => {
    const { secret } = await gateway.tenant({ key: { requestsPerMinute: 5, maxConcurrency: 2 } });
    const answers = await Promise.all(Array.from({ length: 12 }, () => count(secret)));
    const bodies = await Promise.all(answers.map((r) => r.json() as Promise<Record<string, any>>));
    const served = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status === 429);
    expect(served.length).toBeGreaterThan(0);
    expect(served.length).toBeLessThanOrEqual(5);
    expect(served.length + refused.length).toBe(12);
    for (const body of bodies.filter((b) => b.type === 'error')) {
      expect(body.error.type).toBe('rate_limit_error');
      expect(['rate_limit_exceeded', 'concurrency_limit_exceeded']).toContain(body.error.code);
    }
    // The minute holds 5 in all: counts one after another are served until then, and the next is
    // refused for its rate (the parallel ones refused for concurrency may not have spent any).
    let total = served.length;
    let next = await count(secret);
    for (; next.status === 200 && total < 5; total++) next = await count(secret);
    expect(total).toBeLessThanOrEqual(5);
    expect(next.status).toBe(429);
    expect(((await next.json()) as any).error.code).toBe('rate_limit_exceeded');
  });

  it('two counts whose bodies are still arriving hold both slots: a third is refused for concurrency', async () => {
    // A minute large enough that the probes below never spend it, however long a loaded machine
    // takes to admit the slow counts.
    const { secret } = await gateway.tenant({ key: { requestsPerMinute: 100_000, maxConcurrency: 2 } });
    const url = new URL(`${gateway.baseURL}/messages/count_tokens`);
    const text = JSON.stringify(BODY);
    // Each sends its headers and half its body, and waits: admitted, it holds a slot until its body
    // ends.
    const slow = [0, 1].map(() => {
      const request = http.request(url, {
        method: 'POST',
        headers: { 'x-api-key': secret, 'content-type': 'application/json', 'content-length': text.length },
      });
      const early = { status: 0 };
      const answered = new Promise<number>((resolve, reject) => {
        request.on('response', (response) => {
          response.resume();
          early.status = response.statusCode!;
          resolve(response.statusCode!);
        });
        request.on('error', reject);
      });
      // Settled here too, so a failure below does not leave a rejection nobody awaits.
      answered.catch(() => {});
      request.write(text.slice(0, 10));
      return { request, answered, early };
    });
    try {
      let last = '';
      await until(
        'both slow counts hold a slot',
        async () => {
          const probe = await count(secret);
          const body = (await probe.json()) as any;
          last = `${probe.status} ${body.error?.code ?? ''}`;
          return probe.status === 429 && body.error.code === 'concurrency_limit_exceeded';
        },
        {
          timeout: 20_000,
          interval: 100,
          detail: () =>
            `the last probe was answered ${last}; the slow counts ${slow.map((s) => s.early.status || 'unanswered').join(', ')}`,
        },
      );
      for (const { request } of slow) request.end(text.slice(10));
      expect(await Promise.all(slow.map((s) => s.answered))).toEqual([200, 200]);
    } finally {
      for (const { request } of slow) request.destroy();
    }
    const after = await count(secret);
    expect(after.status).toBe(200);
    expect(((await after.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
  }, 40_000);

  it('a budget of 0 does not refuse a count (it costs nothing), and no hold is taken', async () => {
    const { orgId, secret, keyId } = await gateway.tenant();
    await gateway.services.budgets.set('key', keyId, { monthly: 0n, daily: 0n });
    const counted = await count(secret);
    expect(counted.status).toBe(200);
    await counted.arrayBuffer();
    const chat = await fetch(`${gateway.baseURL}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify({ ...BODY, max_tokens: 2 }),
    });
    expect(chat.status).toBe(429);
    expect(((await chat.json()) as any).error.code).toBe('budget_exceeded');
    expect((await gateway.services.gateKeeper.gate.walletState(orgId)).holds).toEqual([]);
  });

  it('a body over TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES is refused with 413 naming it, and its slot given back', async () => {
    const { secret } = await gateway.tenant({ key: { requestsPerMinute: 100, maxConcurrency: 1 } });
    const long = JSON.stringify({ ...BODY, messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024) }] });
    const refused = await count(secret, long);
    expect(refused.status).toBe(413);
    const body = (await refused.json()) as any;
    expect(body.error.message).toContain('TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES');
    expect(body.error.type).toBe('request_too_large');
    const next = await count(secret);
    expect(next.status).toBe(200);
    await next.arrayBuffer();
  });
});
