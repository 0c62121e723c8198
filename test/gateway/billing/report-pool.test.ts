import OpenAI from 'openai';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, TEST_MODELS, type TestGateway } from '../../helpers/gateway.js';
import { postgresAvailable } from '../../helpers/services.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';

/**
 * A heavy tenant's reports cannot take the billed path's connections: with every report connection
 * stuck (here: waiting on a lock of the rollups, as a report over a long history waits on the
 * disk), another organization's new key answers its first billed request, which reads its key and
 * wallet from the store.
 */

const missing = (await postgresAvailable()) ? null : 'the report pool test needs PostgreSQL (its own connections)';
skippedWithout(missing);

describe.skipIf(missing !== null)('reports on their own connections (postgres)', () => {
  let gateway: TestGateway;
  let locker: postgres.Sql;
  let look: postgres.Sql;

  beforeAll(async () => {
    gateway = await startTestGateway('postgres', {
      TOLLGATE_REPORTS_POOL_SIZE: '3',
      TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS: '60000',
    });
    locker = postgres(gateway.services.config.databaseUrl!, { max: 1, onnotice: () => {} });
    look = postgres(gateway.services.config.databaseUrl!, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await locker?.end();
    await look?.end();
    await gateway?.close();
  });

  it("another organization's new key and billed request answer while a tenant's reports hold their pool", async () => {
    const heavy = await gateway.tenant();
    const heavyClient = new OpenAI({ baseURL: gateway.baseURL, apiKey: heavy.secret, maxRetries: 0 });
    await heavyClient.chat.completions.create({
      model: TEST_MODELS.chat.id,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await gateway.charged();

    // Every report now waits: more of them than the store's whole pool (10) holds.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const held = locker.begin(async (tx) => {
      await tx`lock table usage_daily in access exclusive mode`;
      locked();
      await released;
    });
    await isLocked;
    const reports = Array.from({ length: 8 }, () =>
      fetch(`${gateway.baseURL}/usage/summary?group_by=day`, { headers: { authorization: `Bearer ${heavy.secret}` } }),
    );
    try {
      await until(
        'the reports wait on the lock',
        async () => {
          const [row] = await look<{ n: number }[]>`select count(*)::int as n from pg_stat_activity
            where wait_event_type = 'Lock' and datname = current_database()`;
          return row!.n >= 3;
        },
        { timeout: 20_000 },
      );

      const newKeyAnswers = async () => {
        const other = await gateway.tenant();
        const otherClient = new OpenAI({ baseURL: gateway.baseURL, apiKey: other.secret, maxRetries: 0 });
        return otherClient.chat.completions.create({
          model: TEST_MODELS.chat.id,
          messages: [{ role: 'user', content: 'still billed' }],
        });
      };
      // Alone it takes milliseconds; waiting for a report connection, it would wait for the lock (a
      // 503 after 5 s).
      const answer = await Promise.race([
        newKeyAnswers(),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error('the new key did not answer within 4 s')), 4_000).unref(),
        ),
      ]);
      expect(answer.choices[0]!.message.content).toBeTruthy();
    } finally {
      release();
      await held;
    }
    // The reports themselves answer once the lock goes.
    for (const report of await Promise.all(reports)) expect(report.status).toBe(200);
    await gateway.charged();
  });
});

describe.skipIf(missing !== null)('a report past its statement timeout (postgres)', () => {
  let gateway: TestGateway;
  let locker: postgres.Sql;

  beforeAll(async () => {
    gateway = await startTestGateway('postgres', { TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS: '300' });
    locker = postgres(gateway.services.config.databaseUrl!, { max: 1, onnotice: () => {} });
  });
  afterAll(async () => {
    await locker?.end();
    await gateway?.close();
  });

  it('is a 503 naming TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS, ended by the database', async () => {
    const tenant = await gateway.tenant();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const held = locker.begin(async (tx) => {
      await tx`lock table usage_daily in access exclusive mode`;
      locked();
      await released;
    });
    await isLocked;
    try {
      const res = await fetch(`${gateway.baseURL}/usage/summary`, {
        headers: { authorization: `Bearer ${tenant.secret}` },
      });
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('server_busy');
      expect(body.error.message).toContain('TOLLGATE_REPORTS_STATEMENT_TIMEOUT_MS');
    } finally {
      release();
      await held;
    }
  });
});
