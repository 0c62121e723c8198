import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { adminCallTo, type GatewayProcess, startGatewayProcess } from '../../helpers/processes.js';
import {
  createTestDatabase,
  deleteRedisPrefix,
  postgresAndRedisOrSkip,
  redisUrl,
  uniqueRedisPrefix,
} from '../../helpers/services.js';
import { until } from '../../helpers/wait.js';

/**
 * Budgets hold across replicas: two gateways on one PostgreSQL and one Redis, a budget of 0.01 USD
 * on a project (then on a key), 200 requests at once split between them. What is charged never
 * passes the budget (the gate admits a hold only where it fits: at most one hold past is the bound,
 * none is what it gives), every refusal is 429 `budget_exceeded` naming the budget and when its
 * window resets, and once the requests in flight end, the budget's spend is what the usage records
 * hold.
 */

const ready = await postgresAndRedisOrSkip('the budget replica tests');

const ADMIN_TOKEN = 'budget-replicas-operator-token-0123';
const BUDGET = '0.01';
const BUDGET_NANOS = 10_000_000n;

describe.skipIf(!ready)('budgets across two replicas', () => {
  let sim: RunningSimulator;
  let tmp: string;
  let database: { url: string; drop(): Promise<void> };
  let sql: postgres.Sql;
  const prefix = uniqueRedisPrefix();
  const replicas: GatewayProcess[] = [];
  let orgId: string;

  const admin = <T>(method: string, route: string, body?: unknown) =>
    adminCallTo<T>(replicas[0]!.url, ADMIN_TOKEN, method, route, body);

  beforeAll(async () => {
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 4096 }], itlMs: 2 });
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-budgets-'));
    await writeFile(
      path.join(tmp, 'engines.json'),
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: sim.url }] }),
    );
    database = await createTestDatabase();
    sql = postgres(database.url, { max: 2, onnotice: () => {} });
    for (const name of ['one', 'two'])
      replicas.push(
        await startGatewayProcess(name, {
          DATABASE_URL: database.url,
          REDIS_URL: redisUrl,
          TOLLGATE_REDIS_PREFIX: prefix,
          TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
          TOLLGATE_SEED_DEMO: 'false',
          TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json'),
          TOLLGATE_DATA_DIR: path.join(tmp, `data-${name}`),
          TOLLGATE_LOG_LEVEL: 'error',
        }),
      );
    await admin('POST', '/models', {
      id: 'sim-chat',
      display_name: 'Sim Chat',
      hf_repo_id: 'tollgate-test/Sim-Chat-1B',
      task_type: 'chat',
      context_length: 4096,
    });
    // 10 USD a million tokens: a request of about 30 tokens costs about 0.0003, and holds a little
    // more.
    await admin('PUT', '/prices/sim-chat', { input_per_million: '10', output_per_million: '10' });
    orgId = (await admin<{ id: string }>('POST', '/orgs', { name: 'budgets' })).id;
    await admin('POST', `/orgs/${orgId}/wallet/topups`, { amount: '100' });
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled(replicas.map((g) => g.child.stop('SIGKILL')));
    await sql?.end().catch(() => {});
    await sim?.close().catch(() => {});
    await deleteRedisPrefix(prefix).catch(() => {});
    await database?.drop().catch(() => {});
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 60_000);

  const ask = (replica: GatewayProcess, secret: string) =>
    fetch(`${replica.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
    });

  /**
   * 200 requests at once, half on each replica; then the charged spend, once every admitted one is
   * written.
   */
  async function burst(secret: string, spentOf: () => Promise<{ spent: bigint; records: number }>) {
    const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => ask(replicas[i % 2]!, secret)));
    const bodies = await Promise.all(responses.map((r) => r.json() as Promise<Record<string, any>>));
    const admitted = responses.filter((r) => r.status === 200).length;
    const refused = responses
      .map((r, i) => ({ response: r, body: bodies[i]! }))
      .filter((r) => r.response.status !== 200);
    await until(
      'every admitted request written to the usage records',
      async () => (await spentOf()).records === admitted,
    );
    return { admitted, refused, spent: (await spentOf()).spent };
  }

  function expectBudgetRefusals(refused: Array<{ response: Response; body: Record<string, any> }>, scope: string) {
    const now = new Date();
    const nextMonth = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(refused.length).toBeGreaterThan(0);
    for (const { response, body } of refused) {
      expect(response.status, JSON.stringify(body)).toBe(429);
      expect(body.error.code).toBe('budget_exceeded');
      expect(response.headers.get('x-budget-scope')).toBe(scope);
      expect(response.headers.get('x-budget-reset')).toBe(nextMonth);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(body.error.details).toContainEqual({ field: 'resets_at', message: nextMonth });
    }
  }

  it("holds a project's monthly budget of 0.01 USD across both replicas", async () => {
    const project = await admin<{ id: string }>('POST', `/orgs/${orgId}/projects`, { name: 'search' });
    const budget = await admin<{ monthly: string }>('PUT', `/projects/${project.id}/budget`, { monthly: BUDGET });
    expect(budget.monthly).toBe('0.01');
    const key = await admin<{ secret: string }>('POST', `/orgs/${orgId}/keys`, {
      name: 'project key',
      project_id: project.id,
      max_concurrency: 500,
      requests_per_minute: 5000,
    });
    const spentOf = async () => {
      const [row] = await sql<Array<{ spent: string; records: number }>>`
        select coalesce(sum(cost_nanos), 0)::text as spent, count(*)::int as records
        from usage_records where project_id = ${project.id}`;
      return { spent: BigInt(row!.spent), records: row!.records };
    };
    const { admitted, refused, spent } = await burst(key.secret, spentOf);
    expect(admitted).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(BUDGET_NANOS);
    expectBudgetRefusals(refused, 'project');
    // Shown where it is set: the spend is the usage records'.
    const shown = await admin<{ month: { spent: string } }>('GET', `/projects/${project.id}/budget`);
    expect(shown.month.spent).toBe(formatNanos(spent));
  });

  it("holds a key's monthly budget of 0.01 USD across both replicas", async () => {
    const key = await admin<{ id: string; secret: string }>('POST', `/orgs/${orgId}/keys`, {
      name: 'budgeted key',
      max_concurrency: 500,
      requests_per_minute: 5000,
    });
    await admin('PUT', `/keys/${key.id}/budget`, { monthly: BUDGET });
    const spentOf = async () => {
      const [row] = await sql<Array<{ spent: string; records: number }>>`
        select coalesce(sum(cost_nanos), 0)::text as spent, count(*)::int as records
        from usage_records where key_id = ${key.id}`;
      return { spent: BigInt(row!.spent), records: row!.records };
    };
    const { admitted, refused, spent } = await burst(key.secret, spentOf);
    expect(admitted).toBeGreaterThan(0);
    expect(spent).toBeLessThanOrEqual(BUDGET_NANOS);
    expectBudgetRefusals(refused, 'key');
    // One at a time until refused: the budget binds on what was charged, never past it.
    for (let i = 0; i < 100; i++) {
      const response = await ask(replicas[i % 2]!, key.secret);
      await response.arrayBuffer();
      if (response.status === 429) break;
    }
    await until('the last request written', async () => (await spentOf()).spent > spent);
    expect((await spentOf()).spent).toBeLessThanOrEqual(BUDGET_NANOS);
    const last = await ask(replicas[0]!, key.secret);
    expect(((await last.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');
  });
  it('a budget lowered on one replica mid-burst on the other binds every request sent after the answer', async () => {
    // Issue 68: before, the other replica's request-path cache kept the old budget until its next
    // catalog poll (TOLLGATE_CATALOG_POLL_MS, 250 ms), and admitted requests sent up to 115 ms
    // after the answer.
    const key = await admin<{ id: string; secret: string }>('POST', `/orgs/${orgId}/keys`, {
      name: 'lowered mid-burst',
      max_concurrency: 500,
      requests_per_minute: 5000,
    });
    await admin('PUT', `/keys/${key.id}/budget`, { monthly: '1.00' });
    const sent: Array<{ at: number; status: number; code?: string }> = [];
    let running = true;
    const worker = async () => {
      while (running) {
        const at = performance.now();
        const response = await ask(replicas[1]!, key.secret);
        const body = (await response.json()) as { error?: { code: string } };
        sent.push({ at, status: response.status, code: body.error?.code });
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    try {
      await until('the burst is under way', () => sent.filter((s) => s.status === 200).length >= 10);
      await admin('PUT', `/keys/${key.id}/budget`, { monthly: '0' });
      const answeredAt = performance.now();
      // On past the other replica's next catalog poll (250 ms) by far: the window the change had
      // before.
      await until('requests sent for 600 ms past the answer', () => sent.some((s) => s.at > answeredAt + 600));
      running = false;
      await Promise.all(workers);
      const after = sent.filter((s) => s.at > answeredAt);
      expect(after.length).toBeGreaterThan(0);
      expect(after.filter((s) => s.status === 200)).toEqual([]);
      for (const refused of after) expect(refused).toMatchObject({ status: 429, code: 'budget_exceeded' });
    } finally {
      running = false;
      await Promise.all(workers);
    }
  });
});

/**
 * Nanos as the API writes amounts (`formatAmount`): two decimals at least, no trailing zeros past
 * them.
 */
function formatNanos(nanos: bigint): string {
  const fraction = (nanos % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${nanos / 1_000_000_000n}.${fraction}`;
}
