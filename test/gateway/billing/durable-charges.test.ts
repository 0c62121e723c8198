import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdFor } from '../../../src/gateway/billing/holds.js';

const holdNanosOf = (...args: Parameters<typeof holdFor>) => holdFor(...args).holdNanos;
import { formatAmount } from '../../../src/gateway/billing/money.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { adminCallTo, type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import { scrape } from '../../helpers/prometheus.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAdminUrl,
  postgresAndRedisOrSkip,
  redisUrl,
  uniqueRedisPrefix,
} from '../../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';
import { until } from '../../helpers/wait.js';

/**
 * The money promises of a request path that waits on no database, checked on
 * gateway processes: a charge is durable (in the replica's journal) before
 * the answer's last byte, so a gateway SIGKILLed before it wrote the charge
 * to PostgreSQL writes it when it starts again; and the overdraft bound holds
 * across two replicas sharing one Redis.
 */

const ready = await postgresAndRedisOrSkip('the durable charge tests');

const ADMIN_TOKEN = 'durable-operator-token-0123456789';

describe.skipIf(!ready)('charges across SIGKILL, and the overdraft bound across replicas', () => {
  let sim: RunningSimulator;
  let tmp: string;
  let database: { url: string; drop(): Promise<void> };
  let sql: postgres.Sql;
  let pgProxy: TcpProxy;
  const prefix = uniqueRedisPrefix();
  const running = new Set<GatewayProcess>();

  const start = async (name: string, extra: Record<string, string> = {}) => {
    const pg = new URL(database.url);
    pg.hostname = '127.0.0.1';
    pg.port = String(pgProxy.port);
    const gateway = await startGatewayProcess(name, {
      DATABASE_URL: pg.toString(),
      REDIS_URL: redisUrl,
      TOLLGATE_REDIS_PREFIX: prefix,
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
      // Each replica its own data folder: its journal.
      TOLLGATE_DATA_DIR: path.join(tmp, `data-${name}`),
      TOLLGATE_LOG_LEVEL: 'error',
      ...extra,
    });
    running.add(gateway);
    return gateway;
  };

  beforeAll(async () => {
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }] });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-durable-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: sim.url }] }),
    );
    database = await createTestDatabase();
    sql = postgres(database.url, { max: 2, onnotice: () => {} });
    pgProxy = await startTcpProxy(Number(new URL(postgresAdminUrl).port || 5432));
  }, 60_000);

  afterAll(async () => {
    await pgProxy?.start().catch(() => {});
    await Promise.allSettled([...running].map((g) => g.child.stop('SIGKILL')));
    await pgProxy?.stop().catch(() => {});
    await sql?.end().catch(() => {});
    await sim?.close().catch(() => {});
    await deleteRedisPrefix(prefix).catch(() => {});
    await database?.drop().catch(() => {});
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 60_000);

  const admin = <T>(gateway: GatewayProcess, method: string, route: string, body?: unknown) =>
    adminCallTo<T>(gateway.url, ADMIN_TOKEN, method, route, body);

  const body = { model: 'sim-chat', max_tokens: 8, ignore_eos: true, messages: [{ role: 'user', content: 'durable' }] };
  const chat = (gateway: GatewayProcess, secret: string, stream = false) =>
    fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, stream }),
      signal: AbortSignal.timeout(20_000),
    });

  async function tenant(gateway: GatewayProcess, credit: string, limits: Record<string, unknown> = {}) {
    const org = await admin<{ id: string }>(gateway, 'POST', '/orgs', { name: 'durable test' });
    if (credit !== '0') await admin(gateway, 'POST', `/orgs/${org.id}/wallet/topups`, { amount: credit });
    const key = await admin<{ id: string; secret: string }>(gateway, 'POST', `/orgs/${org.id}/keys`, {
      name: 'k',
      ...limits,
    });
    return { orgId: org.id, secret: key.secret };
  }

  const recordsOf = (orgId: string) =>
    sql<
      Array<{ id: string; cost_nanos: string }>
    >`select id, cost_nanos::text from usage_records where org_id = ${orgId}`;
  const balanceOf = async (orgId: string) =>
    BigInt(
      (await sql<Array<{ b: string }>>`select balance_nanos::text as b from wallets where org_id = ${orgId}`)[0]!.b,
    );

  it('writes, after a restart, the charges of answers delivered just before a SIGKILL that PostgreSQL never got', async () => {
    await sql`select 1`;
    // The writes below move the catalog version, so the gateway's catalog poll would drop, once,
    // the cache the first request warms: after PostgreSQL is gone, that would make the key unknown.
    // This test is about the journal, not the poll: its first read comes after a minute, long after
    // the test, instead of being waited out.
    const gateway = await start('killed', { TOLLGATE_CATALOG_POLL_MS: '60000' });
    await admin(gateway, 'POST', '/models', {
      id: 'sim-chat',
      display_name: 'Sim Chat',
      hf_repo_id: 'tollgate-test/Sim-Chat-1B',
      task_type: 'chat',
      context_length: 8192,
    });
    await admin(gateway, 'PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
    const t = await tenant(gateway, '1.00');
    expect((await chat(gateway, t.secret)).status).toBe(200); // warms key, model and wallet (its own writes dropped the cache at once)

    // PostgreSQL goes away: answers keep coming, their charges only in the journal.
    await pgProxy.stop();
    const delivered: string[] = [];
    for (const stream of [false, true, false, true, false]) {
      const response = await chat(gateway, t.secret, stream);
      expect(response.status).toBe(200);
      const text = await response.text();
      if (stream) expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      delivered.push(response.headers.get('x-request-id')!);
    }
    await gateway.child.stop('SIGKILL');
    running.delete(gateway);
    await pgProxy.start();
    const before = await recordsOf(t.orgId);
    for (const id of delivered) expect(before.map((r) => r.id)).not.toContain(id);

    // The same data folder: the restarted gateway finds its journal and writes every charge, once.
    const again = await start('killed');
    // Read once its journal is empty: every charge it held is written by then, and none can come
    // later.
    await until(
      'the restarted gateway has written its journal',
      async () => (await scrape(`${again.url}/metrics`, ADMIN_TOKEN)).value('tollgate_charge_spool_depth') === 0,
      {
        timeout: 15_000,
        interval: 200,
      },
    );
    const records = await recordsOf(t.orgId);
    const ids = records.map((r) => r.id);
    for (const id of delivered) expect(ids).toContain(id);
    expect(records).toHaveLength(6);
    const spent = records.reduce((sum, r) => sum + BigInt(r.cost_nanos), 0n);
    expect(await balanceOf(t.orgId)).toBe(1_000_000_000n - spent);
    // And the wallet the gate rebuilt for this org agrees: a request still passes, and is billed
    // like the others.
    expect((await chat(again, t.secret)).status).toBe(200);
  }, 90_000);

  it('holds the overdraft bound across two replicas sharing Redis: at most one hold below zero', async () => {
    const [a, b] = [await start('a'), await start('b')];
    // B and A read keys, models and prices afresh (B has never seen them; A's own writes drop its
    // cache): no catalog poll to wait for.
    const probe = await tenant(a, '1.00');
    const probeResponse = await chat(a, probe.secret);
    expect(probeResponse.status).toBe(200);
    const probeId = probeResponse.headers.get('x-request-id')!;
    const [sample] = await until(
      'the probe is recorded',
      () =>
        sql<Array<{ cost_nanos: string }>>`select cost_nanos::text from usage_records where id = ${probeId}`.then(
          (rows) => rows.length > 0 && rows,
        ),
      {
        interval: 100,
      },
    );
    const credit = BigInt(sample!.cost_nanos) * 5n;

    const t = await tenant(a, '0', { max_concurrency: 100, requests_per_minute: 1000 });
    await admin(a, 'POST', `/orgs/${t.orgId}/wallet/topups`, { amount: formatAmount(credit) });
    const responses = await Promise.all(Array.from({ length: 60 }, (_, i) => chat(i % 2 === 0 ? a : b, t.secret)));
    const statuses = responses.map((r) => r.status);
    await Promise.all(responses.map((r) => r.arrayBuffer()));
    expect(statuses.every((s) => s === 200 || s === 402)).toBe(true);
    const served = statuses.filter((s) => s === 200).length;
    expect(served).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 402).length).toBeGreaterThan(0);

    // Read once both journals are empty (every response above was read to its end): no charge can
    // land later.
    await until('both replicas have written their journals', async () => {
      const depths = await Promise.all(
        [a, b].map(async (g) => (await scrape(`${g.url}/metrics`, ADMIN_TOKEN)).value('tollgate_charge_spool_depth')),
      );
      return depths.every((depth) => depth === 0);
    });
    const records = await recordsOf(t.orgId);
    expect(records).toHaveLength(served);
    const oneHold = holdNanosOf(
      {
        bodyBytes: Buffer.byteLength(JSON.stringify({ ...body, stream: false })),
        body: { ...body, stream: false },
        task: 'chat',
        contextLength: 8192,
      },
      { inputPerToken: 150n, outputPerToken: 600n },
    );
    const balance = await balanceOf(t.orgId);
    expect(balance).toBe(credit - records.reduce((sum, r) => sum + BigInt(r.cost_nanos), 0n));
    expect(balance).toBeGreaterThanOrEqual(-oneHold);
  }, 90_000);
});
