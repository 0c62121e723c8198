import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { adminCallTo, type GatewayProcess, startGatewayProcess } from '../helpers/processes.js';
import { scrape } from '../helpers/prometheus.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAdminUrl,
  postgresAndRedisOrSkip,
  redisHolds,
  redisUrl,
  uniqueRedisPrefix,
} from '../helpers/services.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { sleep, until } from '../helpers/wait.js';

/**
 * Money under faults. Mixed JSON, stream and embeddings load runs through two
 * gateway processes while the test cuts PostgreSQL and Redis (TCP proxies it
 * controls) and sends SIGTERM and SIGKILL to the gateways; then it checks the
 * books. Bounded: about 20 s of load, 127.0.0.1 only.
 *
 * The rules it holds the gateway to:
 * - every completed response (200, read to its end) has exactly one usage
 *   record and, when it cost something, exactly one charge;
 * - a request whose answer never reached its client is billed when the
 *   gateway had made its charge durable (the engine did the work), and not
 *   when it was killed before that: these are counted, not failed;
 * - balance = top-ups − charges, and the ledger sums to the balance;
 * - no hold is left two leases after the last gateway stopped renewing.
 */

const ready = await postgresAndRedisOrSkip('the chaos test');

const ADMIN_TOKEN = 'chaos-operator-token-0123456789';
const LOAD_MS = 20_000;
const WORKERS = 8;
const HOLD_LEASE_MS = 2_000;
const CREDIT_NANOS = 100_000_000_000n;

type Kind = 'json' | 'stream' | 'embeddings';
interface Outcome {
  kind: Kind;
  status: number | 'failed';
  requestId: string | null;
  completed: boolean;
}

describe.skipIf(!ready)('chaos: money holds while stores fail and gateways are stopped and killed', () => {
  let sim: RunningSimulator;
  let tmp: string;
  let database: { url: string; drop(): Promise<void> };
  let sql: postgres.Sql;
  let pgProxy: TcpProxy;
  let redisProxy: TcpProxy;
  const prefix = uniqueRedisPrefix();
  const gateways: Record<'a' | 'b', GatewayProcess | null> = { a: null, b: null };

  const envFor = (name: 'a' | 'b'): Record<string, string> => {
    const pg = new URL(database.url);
    pg.hostname = '127.0.0.1';
    pg.port = String(pgProxy.port);
    return {
      DATABASE_URL: pg.toString(),
      REDIS_URL: `redis://127.0.0.1:${redisProxy.port}`,
      TOLLGATE_REDIS_PREFIX: prefix,
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
      // Each process keeps its own charge journal, and finds it again when it restarts.
      TOLLGATE_DATA_DIR: path.join(tmp, `data-${name}`),
      TOLLGATE_HOLD_LEASE_MS: String(HOLD_LEASE_MS),
      TOLLGATE_SHUTDOWN_GRACE_MS: '3000',
      TOLLGATE_LOG_LEVEL: 'error',
    };
  };
  const startReplica = async (name: 'a' | 'b') => {
    gateways[name] = await startGatewayProcess(`gateway-${name}`, envFor(name));
  };

  beforeAll(async () => {
    sim = await startSimulator({
      models: [
        { name: 'sim-chat', task: 'chat' },
        { name: 'sim-embed', task: 'embedding' },
      ],
      itlMs: 5,
    });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-chaos-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({
        engines: [
          { kind: 'static', model: 'sim-chat', url: sim.url },
          { kind: 'static', model: 'sim-embed', url: sim.url },
        ],
      }),
    );
    database = await createTestDatabase();
    sql = postgres(database.url, { max: 2, onnotice: () => {} });
    pgProxy = await startTcpProxy(Number(new URL(postgresAdminUrl).port || 5432));
    redisProxy = await startTcpProxy(Number(new URL(redisUrl).port || 6379), new URL(redisUrl).hostname);
    await startReplica('a');
    await startReplica('b');
  }, 120_000);

  afterAll(async () => {
    await pgProxy?.start().catch(() => {});
    await redisProxy?.start().catch(() => {});
    await Promise.allSettled(
      Object.values(gateways)
        .filter((g) => g !== null)
        .map((g) => g.child.stop('SIGKILL')),
    );
    await pgProxy?.stop().catch(() => {});
    await redisProxy?.stop().catch(() => {});
    await sql?.end().catch(() => {});
    await sim?.close().catch(() => {});
    await deleteRedisPrefix(prefix).catch(() => {});
    await database
      ?.drop()
      .catch((error: unknown) => console.warn(`could not drop the chaos database: ${String(error)}`));
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 60_000);

  const admin = <T>(method: string, route: string, body?: unknown) =>
    adminCallTo<T>(gateways.a!.url, ADMIN_TOKEN, method, route, body);

  /** One request of `kind` through `gateway`, read to its end; what the client saw. */
  async function send(gateway: GatewayProcess, secret: string, kind: Kind): Promise<Outcome> {
    const chat = {
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'chaos' }],
      max_tokens: 24,
      ignore_eos: true,
    };
    const [route, body] =
      kind === 'embeddings'
        ? ['/v1/embeddings', { model: 'sim-embed', input: ['chaos one', 'chaos two'] }]
        : ['/v1/chat/completions', { ...chat, stream: kind === 'stream' }];
    try {
      const response = await fetch(`${gateway.url}${route}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      const requestId = response.headers.get('x-request-id');
      const text = await response.text();
      let completed = false;
      if (response.status === 200) {
        completed =
          kind === 'stream'
            ? text.trimEnd().endsWith('data: [DONE]') && !text.includes('"error"')
            : JSON.parse(text).usage !== undefined;
      }
      return { kind, status: response.status, requestId, completed };
    } catch {
      return { kind, status: 'failed', requestId: null, completed: false };
    }
  }

  it('keeps the books exact through store cuts, SIGTERM and SIGKILL', async () => {
    await admin('POST', '/models', {
      id: 'sim-chat',
      display_name: 'Sim Chat',
      hf_repo_id: 'tollgate-test/Sim-Chat-1B',
      task_type: 'chat',
      context_length: 8192,
    });
    await admin('POST', '/models', {
      id: 'sim-embed',
      display_name: 'Sim Embed',
      hf_repo_id: 'tollgate-test/Sim-Embed',
      task_type: 'embedding',
      context_length: 512,
    });
    await admin('PUT', '/prices/sim-chat', { input_per_million: '0.15', output_per_million: '0.60' });
    await admin('PUT', '/prices/sim-embed', { input_per_million: '0.02', output_per_million: '0' });
    const tenants: Array<{ orgId: string; secret: string }> = [];
    for (let i = 0; i < 3; i++) {
      const org = await admin<{ id: string }>('POST', '/orgs', { name: `chaos ${i}` });
      await admin('POST', `/orgs/${org.id}/wallet/topups`, { amount: '100' });
      const key = await admin<{ secret: string }>('POST', `/orgs/${org.id}/keys`, {
        name: 'chaos',
        max_concurrency: 100,
        requests_per_minute: 100_000,
      });
      tenants.push({ orgId: org.id, secret: key.secret });
    }

    const outcomes: Outcome[] = [];
    const events: string[] = [];
    const loadEnds = Date.now() + LOAD_MS;
    const kinds: Kind[] = ['json', 'stream', 'embeddings'];
    const worker = async (n: number) => {
      for (let i = 0; Date.now() < loadEnds; i++) {
        const up = (['a', 'b'] as const).map((name) => gateways[name]).filter((g): g is GatewayProcess => g !== null);
        if (up.length === 0) {
          // No gateway is up (both restarting): the load pauses a moment, it waits for nothing it
          // checks.
          await sleep(50);
          continue;
        }
        outcomes.push(
          await send(
            up[(n + i) % up.length]!,
            tenants[(n + i) % tenants.length]!.secret,
            kinds[(n * 7 + i) % kinds.length]!,
          ),
        );
      }
    };
    const stop = async (name: 'a' | 'b', signal: NodeJS.Signals) => {
      const gateway = gateways[name]!;
      gateways[name] = null;
      events.push(`${signal} ${name}`);
      process.kill(gateway.child.pid, signal);
      await gateway.child.exit;
    };
    const restart = async (name: 'a' | 'b', signal: NodeJS.Signals) => {
      await stop(name, signal);
      await startReplica(name);
    };
    const cut = async (proxy: TcpProxy, what: string, ms: number) => {
      events.push(`cut ${what}`);
      await proxy.stop();
      await sleep(ms); // how long the store stays away, under load: the fault itself
      await proxy.start();
    };
    // The schedule of faults: each sleep is how long the load runs between two faults (or a fault
    // lasts), not a wait for anything.
    const chaos = async () => {
      await sleep(2_000);
      await cut(pgProxy, 'PostgreSQL', 2_500);
      await sleep(1_000);
      await cut(redisProxy, 'Redis', 2_500);
      await sleep(1_000);
      await restart('a', 'SIGTERM');
      await sleep(500 + Math.random() * 1_000);
      await restart('b', 'SIGKILL');
      await sleep(500 + Math.random() * 1_000);
      // Both at once: PostgreSQL away while a gateway is killed (its charges can only be in its
      // journal).
      await pgProxy.stop();
      events.push('cut PostgreSQL');
      await sleep(500);
      await stop('a', 'SIGKILL');
      // A gateway does not start without its database (an orchestrator restarts it): bring it back
      // first.
      await pgProxy.start();
      await startReplica('a');
    };
    await Promise.all([chaos(), ...Array.from({ length: WORKERS }, (_, n) => worker(n))]);

    // The journals write what the outage left (retried every second). The books are read once no
    // call is under way on either gateway and both journals are empty (a killed gateway's journal
    // is read again by its restart): from then on no charge can land, so a late or second one is in
    // what is read, not after it.
    const running = Object.values(gateways).filter((g): g is GatewayProcess => g !== null);
    const pending = async () =>
      Promise.all(
        running.map(async (g) => {
          const metrics = await scrape(`${g.url}/metrics`, ADMIN_TOKEN);
          return {
            gateway: g.child.name,
            inFlight: metrics.value('tollgate_holds_outstanding'),
            journaled: metrics.value('tollgate_charge_spool_depth'),
          };
        }),
      );
    await until(
      'both gateways have written every charge',
      async () => (await pending()).every((p) => p.inFlight === 0 && p.journaled === 0),
      {
        timeout: 30_000,
        interval: 250,
        detail: pending,
      },
    );
    // Holds of killed processes expire within two leases (the next heartbeat of a replica gives
    // them back).
    const holdsLeft = await until('no hold is left', async () => (await redisHolds(prefix)) === 0, {
      timeout: 2 * HOLD_LEASE_MS + 1_000,
      interval: 250,
    }).then(
      () => 0,
      () => redisHolds(prefix),
    );

    const completed = outcomes.filter((o) => o.completed);
    const ids = completed.map((o) => o.requestId!);

    const records = await sql<
      Array<{ id: string; org_id: string; status: number; cost: string }>
    >`select id, org_id, status, cost_nanos::text as cost from usage_records`;
    const charges = await sql<
      Array<{ request_id: string; n: number }>
    >`select request_id, count(*)::int as n from ledger_entries where kind = 'charge' group by request_id`;
    const chargesOf = new Map(charges.map((c) => [c.request_id, c.n]));
    const recordOf = new Map(records.map((r) => [r.id, r]));
    const completedIds = new Set(ids);
    const neverDelivered = records.filter((r) => !completedIds.has(r.id));
    const unbilled = ids.filter((id) => !recordOf.has(id));
    const counts = {
      events,
      requests: outcomes.length,
      completed: completed.length,
      byStatus: Object.fromEntries(
        [...new Set(outcomes.map((o) => String(o.status)))].map((s) => [
          s,
          outcomes.filter((o) => String(o.status) === s).length,
        ]),
      ),
      completedWithoutCharge: unbilled.length,
      chargedButNotDelivered: neverDelivered.length,
      holdsLeft,
    };
    console.log(`chaos: ${JSON.stringify(counts)}`);

    expect(completed.length).toBeGreaterThan(100);
    expect(unbilled).toEqual([]);
    for (const id of ids) {
      const record = recordOf.get(id)!;
      expect(record.status).toBe(200);
      expect(chargesOf.get(id) ?? 0).toBe(BigInt(record.cost) > 0n ? 1 : 0);
    }
    for (const [requestId, n] of chargesOf) {
      expect(n, `charges of ${requestId}`).toBe(1);
      expect(recordOf.has(requestId)).toBe(true);
    }
    for (const { orgId } of tenants) {
      const [wallet] = await sql<
        Array<{ balance: string }>
      >`select balance_nanos::text as balance from wallets where org_id = ${orgId}`;
      const [ledger] = await sql<
        Array<{ total: string }>
      >`select sum(amount_nanos)::text as total from ledger_entries where org_id = ${orgId}`;
      const spent = records.filter((r) => r.org_id === orgId).reduce((sum, r) => sum + BigInt(r.cost), 0n);
      expect(BigInt(wallet!.balance)).toBe(CREDIT_NANOS - spent);
      expect(BigInt(ledger!.total)).toBe(BigInt(wallet!.balance));
    }
    expect(holdsLeft).toBe(0);
  }, 150_000);
});
