import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { expectError } from '../../helpers/envelope.js';
import { adminCallTo, catalogSeenBy, type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAndRedisOrSkip,
  redisUrl,
  uniqueRedisPrefix,
} from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

/**
 * Per-key limits held in Redis are shared by every replica: two gateway
 * processes on one PostgreSQL database and one Redis, in front of one
 * simulator, count each key's requests and in-flight streams together.
 */

const ready = await postgresAndRedisOrSkip('the replica limit tests');

const ADMIN_TOKEN = 'replica-operator-token-0123456789';

interface Key {
  id: string;
  secret: string;
}

describe.skipIf(!ready)('per-key limits across gateway replicas', () => {
  let sim: RunningSimulator;
  let tmp: string;
  let database: { url: string; drop(): Promise<void> } | undefined;
  const prefix = uniqueRedisPrefix();
  const gateways: GatewayProcess[] = [];
  let a: GatewayProcess;
  let b: GatewayProcess;

  const gatewayEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
    DATABASE_URL: database!.url,
    REDIS_URL: redisUrl,
    TOLLGATE_REDIS_PREFIX: prefix,
    TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
    TOLLGATE_SEED_DEMO: 'false',
    TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
    TOLLGATE_DATA_DIR: path.join(tmp, 'data'),
    TOLLGATE_LOG_LEVEL: 'warn',
    ...extra,
  });

  async function startReplica(name: string, extra: Record<string, string> = {}): Promise<GatewayProcess> {
    const gateway = await startGatewayProcess(name, gatewayEnv(extra));
    gateways.push(gateway);
    return gateway;
  }

  beforeAll(async () => {
    // 20 ms between tokens: a 30-token stream stays in flight for about 0.6 s.
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }], itlMs: 20 });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-replicas-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: sim.url }] }),
    );
    database = await createTestDatabase();
    // A first, then B: on a database not copied from the run's template, A runs the migrations
    // and B finds them done.
    a = await startReplica('gateway-a');
    b = await startReplica('gateway-b');
    await adminCall('POST', '/models', {
      id: 'sim-chat',
      display_name: 'Sim Chat',
      hf_repo_id: 'tollgate-test/Sim-Chat-1B',
      task_type: 'chat',
      context_length: 8192,
    });
    await adminCall('PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
  }, 120_000);

  afterAll(async () => {
    // Each step runs even if an earlier one fails: no child, key or database is left behind.
    await Promise.allSettled(gateways.map((g) => g.child.stop()));
    await sim?.close().catch(() => {});
    await deleteRedisPrefix(prefix).catch((error: unknown) =>
      console.warn(`could not delete Redis keys ${prefix}*: ${String(error)}`),
    );
    await database
      ?.drop()
      .catch((error: unknown) => console.warn(`could not drop the test database: ${String(error)}`));
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 60_000);

  const adminCall = <T = Record<string, unknown>>(method: string, route: string, body?: unknown) =>
    adminCallTo<T>(a.url, ADMIN_TOKEN, method, route, body);

  /** A funded organization of its own with one key, made through A's management API. */
  async function createKey(limits: Record<string, unknown>): Promise<Key> {
    const org = await adminCall<{ id: string }>('POST', '/orgs', { name: 'replica test org' });
    await adminCall('POST', `/orgs/${org.id}/wallet/topups`, { amount: '100' });
    const key = await adminCall<{ id: string; secret: string }>('POST', `/orgs/${org.id}/keys`, {
      name: 'replica test key',
      ...limits,
    });
    return { id: key.id, secret: key.secret };
  }

  const chat = (gateway: GatewayProcess, key: Key, extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], ...extra }),
      signal: signal ?? AbortSignal.timeout(20_000),
    });
  const longStream = (gateway: GatewayProcess, key: Key) =>
    chat(gateway, key, { stream: true, max_tokens: 30, ignore_eos: true });

  /** Status and error code of a response, its body read to the end. */
  async function outcome(response: Response): Promise<{ status: number; code: string | null; via: string }> {
    const text = await response.text();
    const code =
      response.status === 200 ? null : ((JSON.parse(text) as { error?: { code?: string } }).error?.code ?? '?');
    return { status: response.status, code, via: response.url };
  }

  it('counts requests per minute once across replicas: exactly N of 3N concurrent requests pass', async () => {
    const n = 20;
    // Concurrency far above the batch size, so only the per-minute limit can refuse.
    const key = await createKey({ requests_per_minute: n, max_concurrency: 100 });
    const results: Array<{ status: number; code: string | null; via: string }> = [];
    // Batches of 12 alternating between A and B: the limit falls inside a batch, where requests
    // race.
    for (let start = 0; start < 3 * n; start += 12) {
      const batch = Array.from({ length: Math.min(12, 3 * n - start) }, (_, i) =>
        chat((start + i) % 2 === 0 ? a : b, key).then(outcome),
      );
      results.push(...(await Promise.all(batch)));
    }
    const passed = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(passed).toHaveLength(n);
    expect(refused).toHaveLength(2 * n);
    expect(new Set(refused.map((r) => `${r.status} ${r.code}`))).toEqual(new Set(['429 rate_limit_exceeded']));
    // Both replicas refused some: neither kept a count of its own.
    expect(refused.some((r) => r.via.startsWith(a.url))).toBe(true);
    expect(refused.some((r) => r.via.startsWith(b.url))).toBe(true);

    for (const gateway of [a, b]) {
      const late = await chat(gateway, key);
      expect(late.headers.get('x-ratelimit-limit')).toBe(String(n));
      expect(late.headers.get('x-ratelimit-remaining')).toBe('0');
      await expectError(late, 429, 'rate_limit_exceeded', 'rate_limit_error');
    }
  }, 60_000);

  it('holds a key to max_concurrency across replicas: the engine never runs more than C of its streams', async () => {
    const c = 3;
    const key = await createKey({ max_concurrency: c });
    expect(sim.stats().running).toBe(0);
    let maxRunning = 0;
    const poll = setInterval(() => {
      maxRunning = Math.max(maxRunning, sim.stats().running);
    }, 5);
    let results: Array<{ status: number; code: string | null; text: string }>;
    try {
      const responses = await Promise.all(Array.from({ length: 12 }, (_, i) => longStream(i % 2 === 0 ? a : b, key)));
      results = await Promise.all(
        responses.map(async (response) => {
          const text = await response.text();
          const code =
            response.status === 200 ? null : ((JSON.parse(text) as { error?: { code?: string } }).error?.code ?? '?');
          return { status: response.status, code, text };
        }),
      );
    } finally {
      clearInterval(poll);
    }
    const passed = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(maxRunning).toBeGreaterThan(0);
    expect(maxRunning).toBeLessThanOrEqual(c);
    expect(passed.length).toBeGreaterThanOrEqual(c);
    expect(passed.length + refused.length).toBe(12);
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused.map((r) => `${r.status} ${r.code}`))).toEqual(new Set(['429 concurrency_limit_exceeded']));
    // Every admitted stream ran to its end: 30 tokens, then [DONE].
    for (const { text } of passed) expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
  }, 60_000);

  it("puts an edit made through one replica's API in force on the other replica within the catalog poll", async () => {
    const key = await createKey({ requests_per_minute: 1 });
    expect((await outcome(await chat(b, key))).status).toBe(200);
    await expectError(await chat(b, key), 429, 'rate_limit_exceeded', 'rate_limit_error');

    // B reads the catalog version every TOLLGATE_CATALOG_POLL_MS (250 ms): wait until it has
    // dropped what it read before the edit.
    const seen = () => catalogSeenBy(b, a, ADMIN_TOKEN);
    await adminCall('PATCH', `/keys/${key.id}`, { requests_per_minute: 3 });
    await seen();
    const raised = await chat(b, key);
    expect(raised.status).toBe(200);
    expect(raised.headers.get('x-ratelimit-limit')).toBe('3');
    expect(raised.headers.get('x-ratelimit-remaining')).toBe('1');
    await raised.arrayBuffer();

    // And downwards: two used, a limit of 2 refuses the next one at once.
    await adminCall('PATCH', `/keys/${key.id}`, { requests_per_minute: 2 });
    await seen();
    const lowered = await chat(b, key);
    expect(lowered.headers.get('x-ratelimit-limit')).toBe('2');
    await expectError(lowered, 429, 'rate_limit_exceeded', 'rate_limit_error');
  }, 30_000);

  it('frees the slot of a gateway that died within the concurrency lease', async () => {
    const leaseMs = 3_000;
    const c = await startReplica('gateway-c', { TOLLGATE_CONCURRENCY_LEASE_MS: String(leaseMs) });
    const key = await createKey({ max_concurrency: 1 });
    // 500 tokens at 20 ms: about 10 s, far longer than the test needs.
    const held = await chat(c, key, { stream: true, max_tokens: 500, ignore_eos: true }, AbortSignal.timeout(30_000));
    expect(held.status).toBe(200);
    const reader = held.body!.getReader();
    let killedAt: number;
    try {
      const first = await reader.read();
      expect(first.done).toBe(false);
      await expectError(await chat(a, key), 429, 'concurrency_limit_exceeded', 'rate_limit_error');

      await c.child.stop('SIGKILL');
      killedAt = Date.now();
      // Nothing released the slot: it stays taken until its lease runs out.
      await expectError(await chat(a, key), 429, 'concurrency_limit_exceeded', 'rate_limit_error');

      const freedAfter = await until(
        'A admits the key again',
        async () => {
          const response = await chat(a, key);
          if (response.status !== 200) {
            await expectError(response, 429, 'concurrency_limit_exceeded', 'rate_limit_error');
            return false;
          }
          await response.arrayBuffer();
          return Date.now() - killedAt;
        },
        { timeout: 8_000, interval: 250 },
      );
      // C renewed its lease every second until it died, so it lasted at least ~2 s more, and at
      // most the lease.
      expect(freedAfter).toBeGreaterThanOrEqual(1_000);
      expect(freedAfter).toBeLessThanOrEqual(leaseMs + 1_500);
    } finally {
      await reader.cancel().catch(() => {});
    }
  }, 90_000);
});
