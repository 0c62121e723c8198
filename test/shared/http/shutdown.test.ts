import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAndRedisOrSkip,
  redisHolds,
  redisUrl,
  uniqueRedisPrefix,
} from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

/**
 * A rolling deploy sends SIGTERM: the gateway stops taking connections, lets
 * what is in flight finish (up to its grace period), bills it, then exits.
 */

const ready = await postgresAndRedisOrSkip('the SIGTERM drain test');
const ADMIN_TOKEN = 'shutdown-operator-token-0123456789';

describe.skipIf(!ready)('SIGTERM drains the gateway without losing or leaving unbilled what is in flight', () => {
  let sim: RunningSimulator;
  let tmp: string;
  let database: { url: string; drop(): Promise<void> };
  let sql: postgres.Sql;
  let gateway: GatewayProcess | undefined;
  // Holds live in Redis, where a gateway that exits would leave them: the test checks that it gave
  // them back.
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    // 20 ms between tokens: a 40-token stream runs for about 0.8 s.
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }], itlMs: 20 });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-shutdown-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: sim.url }] }),
    );
    database = await createTestDatabase();
    sql = postgres(database.url, { max: 1, onnotice: () => {} });
  }, 60_000);
  afterEach(async () => {
    await gateway?.child.stop('SIGKILL');
    gateway = undefined;
  });
  afterAll(async () => {
    await sql?.end();
    await sim?.close().catch(() => {});
    await deleteRedisPrefix(prefix).catch(() => {});
    await database?.drop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  async function start(graceMs: number): Promise<{ gateway: GatewayProcess; secret: string; orgId: string }> {
    gateway = await startGatewayProcess('gateway-drain', {
      DATABASE_URL: database.url,
      REDIS_URL: redisUrl,
      TOLLGATE_REDIS_PREFIX: prefix,
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
      TOLLGATE_DATA_DIR: path.join(tmp, 'data'),
      TOLLGATE_SHUTDOWN_GRACE_MS: String(graceMs),
      TOLLGATE_LOG_LEVEL: 'info',
    });
    const admin = async <T>(method: string, route: string, body?: unknown): Promise<T> => {
      const response = await fetch(`${gateway!.url}/admin/v1${route}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${method} ${route}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    };
    await admin('POST', '/models', {
      id: 'sim-chat',
      display_name: 'Sim Chat',
      hf_repo_id: 'tollgate-test/Sim-Chat-1B',
      task_type: 'chat',
      context_length: 8192,
    }).catch(() => {});
    await admin('PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
    const org = await admin<{ id: string }>('POST', '/orgs', { name: 'drain test' });
    await admin('POST', `/orgs/${org.id}/wallet/topups`, { amount: '100' });
    const key = await admin<{ secret: string }>('POST', `/orgs/${org.id}/keys`, {
      name: 'drain',
      max_concurrency: 100,
      requests_per_minute: 1000,
    });
    return { gateway, secret: key.secret, orgId: org.id };
  }

  /**
   * A raw HTTP/1.1 connection: one streamed chat request, and later a pipelined GET /health on the
   * same connection.
   */
  function rawStream(url: string, secret: string, maxTokens: number) {
    const { port } = new URL(url);
    const socket = net.connect(Number(port), '127.0.0.1');
    let received = '';
    const firstChunk = new Promise<void>((resolve) =>
      socket.on('data', (chunk) => ((received += chunk.toString()), received.includes('data: {') && resolve())),
    );
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => {});
    const body = JSON.stringify({
      model: 'sim-chat',
      stream: true,
      max_tokens: maxTokens,
      ignore_eos: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${secret}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    return { socket, firstChunk, closed, received: () => received };
  }

  const chatJson = (url: string, secret: string) =>
    fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim-chat',
        max_tokens: 40,
        ignore_eos: true,
        stream: false,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });

  async function books(orgId: string) {
    const [wallet] = await sql<
      Array<{ balance: string }>
    >`select balance_nanos::text as balance from wallets where org_id = ${orgId}`;
    const records = await sql<
      Array<{ status: number; completion_tokens: number; cost: string }>
    >`select status, completion_tokens, cost_nanos::text as cost from usage_records where org_id = ${orgId}`;
    const [ledger] = await sql<
      Array<{ total: string }>
    >`select coalesce(sum(amount_nanos), 0)::text as total from ledger_entries where org_id = ${orgId}`;
    return {
      balance: BigInt(wallet!.balance),
      records,
      holds: await redisHolds(prefix, orgId),
      ledger: BigInt(ledger!.total),
    };
  }

  it('finishes and bills 8 streams and 4 JSON requests in flight, refuses new connections, answers /health 503, then exits 0', async () => {
    const { gateway: g, secret, orgId } = await start(20_000);
    const streams = Array.from({ length: 8 }, () => rawStream(g.url, secret, 40));
    await Promise.all(streams.map((s) => s.firstChunk));
    const json = Array.from({ length: 4 }, () => chatJson(g.url, secret));
    // All twelve are at the engine (the streams run for about 0.8 s): in flight when the signal
    // comes.
    await until('the 8 streams and 4 JSON requests run at the engine', () => sim.stats().running === 12, {
      timeout: 5_000,
      interval: 5,
    });
    process.kill(g.child.pid, 'SIGTERM');
    // It logs that it drains right after it closed its listener (same tick).
    await until('the gateway says it drains', () => g.child.output().includes('draining: no new connections'), {
      timeout: 5_000,
      interval: 10,
    });
    // A load balancer's check on a kept-alive connection hears 503; a new connection is refused.
    streams[0]!.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const refused = await fetch(`${g.url}/health`).then(
      () => false,
      () => true,
    );
    expect(refused).toBe(true);

    const answers = await Promise.all(json);
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    for (const answer of answers)
      expect(((await answer.json()) as { usage: { completion_tokens: number } }).usage.completion_tokens).toBe(40);
    await Promise.all(streams.map((s) => s.closed));
    for (const stream of streams) {
      expect(stream.received()).toContain('data: [DONE]');
      expect(stream.received().match(/"content":/g)?.length).toBeGreaterThanOrEqual(40);
    }
    expect(streams[0]!.received()).toMatch(/HTTP\/1\.1 503[\s\S]*"status":"draining"/);
    await g.child.exit;
    expect(g.child.exitCode()).toBe(0);

    const after = await books(orgId);
    expect(after.records).toHaveLength(12);
    expect(after.records.every((r) => r.status === 200 && r.completion_tokens === 40)).toBe(true);
    expect(after.holds).toBe(0);
    expect(after.balance).toBe(100_000_000_000n - after.records.reduce((sum, r) => sum + BigInt(r.cost), 0n));
    expect(after.ledger).toBe(after.balance);
  }, 60_000);

  it('cuts what still runs when the grace period is over, bills it for what it used, gives back its holds, and exits 0', async () => {
    const { gateway: g, secret, orgId } = await start(500);
    // 2,000 tokens at 20 ms: 40 s, far past the grace period.
    const streams = Array.from({ length: 4 }, () => rawStream(g.url, secret, 2_000));
    await Promise.all(streams.map((s) => s.firstChunk));
    const signalled = performance.now();
    process.kill(g.child.pid, 'SIGTERM');
    await Promise.all(streams.map((s) => s.closed));
    await g.child.exit;
    expect(performance.now() - signalled).toBeLessThan(8_000);
    expect(g.child.exitCode()).toBe(0);

    const after = await books(orgId);
    expect(after.records).toHaveLength(4);
    for (const record of after.records) {
      expect(record.status).toBe(499);
      expect(record.completion_tokens).toBeGreaterThan(0);
      expect(record.completion_tokens).toBeLessThan(2_000);
    }
    expect(after.holds).toBe(0);
    expect(after.ledger).toBe(after.balance);
  }, 60_000);
});
