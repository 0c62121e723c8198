import { eq, sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../src/sim/index.js';
import { batchFile, ended, resultLines, startBatch } from '../helpers/batches.js';
import { TEST_GATEWAY_ENV, type TestGateway } from '../helpers/gateway.js';
import { gatewayReplicas, type GatewayReplicas, type TestReplica } from '../helpers/gateway-replicas.js';
import { postgresAvailable } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

const hasPostgres = await postgresAvailable();

/** A line the simulator answers in about 4 s: 200 tokens, 20 ms apart. */
const LINE_TOKENS = 200;
const ITL_MS = 20;
/** What the engine generates for one call in a second. */
const TOKENS_A_SECOND = 1_000 / ITL_MS;
const longLine = (i: number): Json => ({
  model: 'sim-chat',
  max_tokens: LINE_TOKENS,
  // The simulator's answer ends after 16 tokens unless told to go on to the limit.
  ignore_eos: true,
  messages: [{ role: 'user', content: `Tell a long story, number ${i}` }],
});

/**
 * Work with no client stops when its key or model does, wherever it runs: the key revoked through
 * one replica's operator API while both run the batch's lines, its lines in flight on either are
 * aborted and billed their prompt, and the rest end as error lines, billed nothing.
 */
describe.skipIf(!hasPostgres)('a batch whose key is revoked while it runs', () => {
  let sim: RunningSimulator;
  let replicas: GatewayReplicas;
  let gateway: TestGateway;
  let other: TestReplica;
  let client: OpenAI;
  let reader: OpenAI;
  let keyId: string;

  beforeAll(async () => {
    // The test's own engine, whose generated tokens it counts.
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }], ttftMs: 30, itlMs: ITL_MS });
    replicas = await gatewayReplicas({
      engines: [{ kind: 'static', model: 'sim-chat', url: sim.url }],
      env: { TOLLGATE_BATCHES_CONCURRENCY: '16' },
    });
    gateway = replicas.first;
    const tenant = await gateway.tenant({ credit: '100.00', key: { requestsPerMinute: 100_000, maxConcurrency: 100 } });
    keyId = tenant.keyId;
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    // Another key of the organization reads the batch once the first is revoked.
    const readerKey = await gateway.services.keys.create({ orgId: tenant.orgId, name: 'reader' });
    reader = new OpenAI({ baseURL: gateway.baseURL, apiKey: readerKey.secret, maxRetries: 0 });
    other = await replicas.start();
  }, 120_000);

  afterAll(async () => {
    await replicas?.close();
    await sim?.close();
  });

  it('stops its lines: the engine stops within about a second of the revoke, the rest error lines', async () => {
    const created = await startBatch(client, batchFile(64, '/v1/chat/completions', longLine), '/v1/chat/completions');
    const { db } = gateway.services;
    const running = () =>
      db
        .select({ n: sql<number>`count(*)::int` })
        .from(usageRecords)
        .where(eq(usageRecords.batchId, created.id));
    // Lines under way at the engine from both replicas, a good part of a line's tokens generated
    // when the key goes.
    await until(
      'both replicas run lines, a quarter of a line in',
      () =>
        gateway.services.batches.runner.size > 0 &&
        other.services.batches.runner.size > 0 &&
        sim.stats().running >= 8 &&
        sim.stats().generationTokens >= (sim.stats().running * LINE_TOKENS) / 4,
      { timeout: 30_000, interval: 20 },
    );
    expect((await running())[0]!.n).toBe(0);
    const atRevoke = sim.stats();
    const revoked = await fetch(`${other.url}/admin/v1/keys/${keyId}/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_GATEWAY_ENV.TOLLGATE_ADMIN_TOKEN}` },
    });
    expect(revoked.status).toBe(200);

    await until(
      'every line has ended on both replicas',
      () => gateway.services.batches.runner.size === 0 && other.services.batches.runner.size === 0,
      { timeout: 30_000, interval: 50 },
    );
    // Each line at the engine when the key went generated at most about a second more (the catalog
    // poll, a read, the abort reaching the engine); none reached it after. A line that went on
    // would generate the rest of its answer, three quarters of one.
    const extra = sim.stats().generationTokens - atRevoke.generationTokens;
    expect(extra).toBeLessThanOrEqual((atRevoke.running + 1) * TOKENS_A_SECOND);
    await Promise.all([gateway.charged(10_000), other.charged(10_000)]);
    const records = await db.select().from(usageRecords).where(eq(usageRecords.batchId, created.id));
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) {
      // Cut at the engine: billed what it generated by then, never a whole answer.
      expect(record.status).toBe(499);
      expect(record.completionTokens).toBeLessThan(LINE_TOKENS);
    }
    // Every line is an error line: those cut at the engine, and those stopped before it.
    const batch = await ended(reader, created.id);
    expect(batch.request_counts).toMatchObject({ total: 64, completed: 0, failed: 64 });
    const errors = await resultLines(reader, batch.error_file_id);
    expect(errors).toHaveLength(64);
    const unauthorized = errors.filter((line) => JSON.stringify(line).includes('This API key has been revoked.'));
    expect(unauthorized).toHaveLength(64);
  }, 90_000);
});
