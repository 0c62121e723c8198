import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { expectError } from '../../helpers/envelope.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, redisServerAvailable, startRedisServer, type TestChild } from '../../helpers/processes.js';
import { uniqueRedisPrefix } from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

/**
 * The documented policy while Redis is unreachable is fail closed: billed
 * requests answer 503 `limits_unavailable` with `Retry-After: 1` at once
 * (nothing waits on Redis, nothing is served unlimited, nothing is charged),
 * and limits work again as soon as Redis is back, without a restart.
 */

const canRun = redisServerAvailable();

describe.skipIf(!canRun)('per-key limits while Redis is down', () => {
  let port: number;
  let redisDir: string;
  let redis: TestChild | undefined;
  let gateway: TestGateway | undefined;

  beforeAll(async () => {
    port = await freePort();
    redisDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-redis-'));
    redis = await startRedisServer(port, redisDir);
    gateway = await startTestGateway('pglite', {
      REDIS_URL: `redis://127.0.0.1:${port}`,
      TOLLGATE_REDIS_PREFIX: uniqueRedisPrefix(),
    });
  });

  afterAll(async () => {
    await gateway?.close().catch(() => {});
    await redis?.stop('SIGKILL');
    if (redisDir) await rm(redisDir, { recursive: true, force: true });
  });

  /**
   * The balance once this gateway's charges are written (they reach PostgreSQL just after each
   * answer).
   */
  const balanceAfterCharges = async (orgId: string) => {
    await gateway!.services.applier.settled(5_000);
    return gateway!.services.wallets.balance(orgId);
  };

  const chat = (secret: string, extra: Record<string, unknown> = {}) =>
    fetch(`${gateway!.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], ...extra }),
      signal: AbortSignal.timeout(10_000),
    });

  /**
   * A request with how long it took to answer (headers and body), and how long a /health just
   * before it took: the machine's own pace at that moment, which a loaded machine slows alike.
   */
  async function timed(
    secret: string,
    extra: Record<string, unknown> = {},
  ): Promise<{ response: Response; text: string; ms: number; healthMs: number }> {
    let started = performance.now();
    const health = await fetch(`${gateway!.url}/health`, { signal: AbortSignal.timeout(10_000) });
    await health.arrayBuffer();
    const healthMs = performance.now() - started;
    started = performance.now();
    const response = await chat(secret, extra);
    const text = await response.text();
    return { response, text, ms: performance.now() - started, healthMs };
  }

  /**
   * Answered at once: within 1.5 s more than a few of the /health measured beside it, so never
   * after waiting on Redis (its reconnect, or a command's timeout after another).
   */
  function expectPrompt(result: { ms: number; healthMs: number }): void {
    expect(
      result.ms,
      `answered in ${Math.round(result.ms)} ms, /health in ${Math.round(result.healthMs)} ms`,
    ).toBeLessThan(1_500 + 3 * result.healthMs);
  }

  function expectLimitsUnavailable({ response, text }: { response: Response; text: string }): void {
    const body = JSON.parse(text) as { error?: { code?: string; type?: string; message?: string } };
    expect({ status: response.status, code: body.error?.code, type: body.error?.type }).toEqual({
      status: 503,
      code: 'limits_unavailable',
      type: 'server_error',
    });
    expect(body.error?.message?.length ?? 0).toBeGreaterThan(0);
    expect(response.headers.get('retry-after')).toBe('1');
  }

  const usageCount = async (keyId: string) => {
    // Charges reach PostgreSQL just after the answer (group commit): wait for this gateway's.
    await gateway!.services.applier.settled(5_000);
    return (await gateway!.services.db.select().from(usageRecords).where(eq(usageRecords.keyId, keyId))).length;
  };

  it('counts requests in Redis while it is up', async () => {
    const { secret, keyId } = await gateway!.tenant({ key: { requestsPerMinute: 3 } });
    for (let i = 1; i <= 3; i++) {
      const response = await chat(secret);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-remaining')).toBe(String(3 - i));
      await response.arrayBuffer();
    }
    await expectError(await chat(secret), 429, 'rate_limit_exceeded', 'rate_limit_error');
    expect(await usageCount(keyId)).toBe(3);
  });

  it('answers billed requests 503 limits_unavailable at once while Redis is down, charging nothing', async () => {
    const { secret, keyId, orgId } = await gateway!.tenant();
    const balanceBefore = await balanceAfterCharges(orgId);
    await redis!.stop('SIGKILL');

    // Within a couple of seconds the gateway notices; no answer in between may hang.
    const first = await until(
      'a request is refused 503',
      async () => {
        const result = await timed(secret);
        expectPrompt(result);
        return result.response.status === 503 && result;
      },
      { timeout: 5_000, interval: 100 },
    );
    expectLimitsUnavailable(first);

    // Sequential and concurrent, JSON and streams: each refused quickly.
    for (let i = 0; i < 5; i++) {
      const result = await timed(secret, i % 2 === 0 ? {} : { stream: true });
      expectPrompt(result);
      expectLimitsUnavailable(result);
    }
    const burst = await Promise.all(
      Array.from({ length: 8 }, (_, i) => timed(secret, i % 2 === 0 ? {} : { stream: true })),
    );
    for (const result of burst) {
      expectPrompt(result);
      expectLimitsUnavailable(result);
    }

    // Unbilled routes do not need Redis.
    const models = await fetch(`${gateway!.baseURL}/models`, {
      headers: { authorization: `Bearer ${secret}` },
      signal: AbortSignal.timeout(5_000),
    });
    expect(models.status).toBe(200);
    expect(((await models.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id)).toContain('sim-chat');
    const health = await fetch(`${gateway!.url}/health`, { signal: AbortSignal.timeout(5_000) });
    expect(health.status).toBe(200);
    await health.arrayBuffer();

    // Nothing was charged or recorded for the refusals.
    expect(await usageCount(keyId)).toBe(0);
    expect(await balanceAfterCharges(orgId)).toBe(balanceBefore);
  }, 30_000);

  it('works again, with limits, once Redis is back on the same address', async () => {
    redis = await startRedisServer(port, redisDir);
    const { secret } = await gateway!.tenant();
    // The client reconnects by itself (at most every 2 s): bounded to about 10 s.
    await until(
      'requests succeed again',
      async () => {
        const result = await timed(secret);
        expectPrompt(result);
        if (result.response.status === 200) return true;
        // Redis came back empty: with TOLLGATE_REBUILD_GRACE_MS set, wallets would wait for every
        // replica's report.
        if (result.text.includes('billing_unavailable'))
          expect(result.response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
        else expectLimitsUnavailable(result);
        return false;
      },
      { timeout: 10_000, interval: 200 },
    );

    const { secret: limited, keyId } = await gateway!.tenant({ key: { requestsPerMinute: 2 } });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const response = await chat(limited);
      statuses.push(response.status);
      if (response.status === 429) await expectError(response, 429, 'rate_limit_exceeded', 'rate_limit_error');
      else await response.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect(await usageCount(keyId)).toBe(2);
  }, 30_000);
});
