import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, redisServerAvailable, startRedisServer, type TestChild } from '../../helpers/processes.js';
import { postgresAvailable } from '../../helpers/services.js';
import { refusalSpans, steadyTraffic, type TrafficTenant } from '../../helpers/steady-traffic.js';
import { until } from '../../helpers/wait.js';

/**
 * Issue 69: a cold Redis is not an outage. Steady traffic from five tenants (each two requests at a
 * time) runs through a gateway on PostgreSQL and a Redis of the test's own; midway, that Redis
 * loses everything (FLUSHALL; and, as a restart would, its scripts too). No tenant may be refused
 * for more than 0.5 s, and the limits still hold: a wallet and a budget spent more than half before
 * the loss end no further past their limit than the holds of the requests in flight. Prints each
 * run's figures (`npx vitest run test/gateway/admission/redis-flush.test.ts`).
 */

const ready = redisServerAvailable() && (await postgresAvailable());
if (!ready) console.warn('skipping the flushed-Redis test: it needs PostgreSQL and redis-server');

/**
 * The body every request sends; its hold is its bytes at the input price and its two tokens at the
 * output price.
 */
const BODY = JSON.stringify({
  model: 'sim-chat',
  max_tokens: 2,
  ignore_eos: true,
  messages: [{ role: 'user', content: 'hi' }],
});
const HOLD = BigInt(Buffer.byteLength(BODY)) * 150n + 2n * 600n;
/** Requests each limited tenant makes before the loss: more than half its limit. */
const BEFORE = 60;
const CONCURRENCY = 2;
const CONCURRENCY_N = BigInt(CONCURRENCY);
const MAX_MS = 500;

describe.skipIf(!ready)('a flushed Redis under steady traffic', () => {
  let port: number;
  let redisDir: string;
  let redis: TestChild | undefined;
  let client: Redis | undefined;
  let gateway: TestGateway | undefined;

  beforeAll(async () => {
    port = await freePort();
    redisDir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-flush-'));
    redis = await startRedisServer(port, redisDir);
    client = new Redis(port, '127.0.0.1', { lazyConnect: true });
    await client.connect();
    gateway = await startTestGateway('postgres', {
      REDIS_URL: `redis://127.0.0.1:${port}`,
      TOLLGATE_REDIS_PREFIX: 'flush:',
    });
  }, 60_000);

  afterAll(async () => {
    await gateway?.close().catch(() => {});
    client?.disconnect();
    await redis?.stop('SIGKILL');
    if (redisDir) await rm(redisDir, { recursive: true, force: true });
  });

  const limits = { requestsPerMinute: 100_000, maxConcurrency: 10, monthlyTokens: 100_000_000 };

  /** What one request costs here: a probe tenant's balance before and after one. */
  async function costOfOne(): Promise<bigint> {
    const probe = await gateway!.tenant({ key: limits });
    const before = await gateway!.services.wallets.balance(probe.orgId);
    const traffic = steadyTraffic(gateway!.baseURL, [
      { name: 'probe', secret: probe.secret, concurrency: 1, pauseAfter: 1 },
    ]);
    await until('the probe is answered', () => traffic.succeeded('probe') === 1);
    await traffic.stop();
    await gateway!.charged();
    return before - (await gateway!.services.wallets.balance(probe.orgId));
  }

  async function run(scenario: string, lose: (redis: Redis) => Promise<unknown>): Promise<void> {
    const cost = await costOfOne();
    const limit = 2n * BigInt(BEFORE) * cost;
    const wallet = await gateway!.tenant({ credit: '0', key: limits });
    await gateway!.services.wallets.credit(wallet.orgId, 'topup', limit);
    const budget = await gateway!.tenant({ key: limits });
    await gateway!.services.budgets.set('key', budget.keyId, { daily: limit });
    const free = await Promise.all([1, 2, 3].map(() => gateway!.tenant({ key: limits })));
    const tenants: TrafficTenant[] = [
      { name: 'wallet', secret: wallet.secret, concurrency: CONCURRENCY, pauseAfter: BEFORE },
      { name: 'budget', secret: budget.secret, concurrency: CONCURRENCY, pauseAfter: BEFORE },
      ...free.map((t, i) => ({ name: `free-${i}`, secret: t.secret, concurrency: CONCURRENCY })),
    ];
    const traffic = steadyTraffic(gateway!.baseURL, tenants);
    const started = performance.now();
    await until(
      'the limited tenants spent more than half',
      () => traffic.succeeded('wallet') >= BEFORE && traffic.succeeded('budget') >= BEFORE,
      { timeout: 30_000 },
    );
    await until('half a second of traffic', () => performance.now() - started >= 500);
    await lose(client!);
    const lostAt = performance.now();
    traffic.resume();
    // Time is the subject: traffic runs on for five seconds after the loss (the old rebuild grace
    // was three).
    await until('five seconds after the loss', () => performance.now() - lostAt >= 5_000, { timeout: 10_000 });
    await traffic.stop();
    await gateway!.charged();

    const spans = refusalSpans(traffic.outcomes.filter((o) => o.end >= lostAt));
    const slowest = (from: number, to: number) =>
      Math.round(
        Math.max(...traffic.outcomes.filter((o) => o.start >= from && o.start < to).map((o) => o.end - o.start)),
      );
    const answerMs = { before: slowest(lostAt - 1_000, lostAt), after: slowest(lostAt, lostAt + 1_000) };
    const balance = await gateway!.services.wallets.balance(wallet.orgId);
    const spent = (await gateway!.services.budgets.get('key', budget.keyId)).day.spent;
    const statuses: Record<string, number> = {};
    for (const o of traffic.outcomes) statuses[o.code ?? o.status] = (statuses[o.code ?? o.status] ?? 0) + 1;
    console.log(
      `redis ${scenario}: ${JSON.stringify({ requests: traffic.outcomes.length, statuses, ...spans, answerMs })}` +
        ` wallet ${balance} of ${limit} left, budget ${spent} of ${limit} spent, hold ${HOLD}`,
    );
    expect(spans.longestMs).toBeLessThan(MAX_MS);
    // Limits hold: past them by no more than the holds in flight at the loss and at the end.
    expect(balance).toBeGreaterThanOrEqual(-2n * CONCURRENCY_N * HOLD);
    expect(spent).toBeLessThanOrEqual(limit + CONCURRENCY_N * HOLD);
    // And neither was refused early: each spent its limit, less what one request in flight may
    // hold.
    expect(balance).toBeLessThanOrEqual(CONCURRENCY_N * HOLD);
    expect(spent).toBeGreaterThanOrEqual(limit - 2n * CONCURRENCY_N * HOLD);
  }

  it('FLUSHALL: no tenant refused for more than 0.5 s, and the limits hold', async () => {
    await run('flushed', (redis) => redis.flushall());
  }, 60_000);

  it('keys and scripts lost, as by a restart: the same', async () => {
    await run('restarted', (redis) => redis.multi().flushall().script('FLUSH').exec());
  }, 60_000);
});
