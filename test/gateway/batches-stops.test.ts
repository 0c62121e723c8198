import { eq, sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../src/shared/db/schema.js';
import { batchFile, ended, resultLines, startBatch } from '../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { postgresAvailable } from '../helpers/services.js';
import { until } from '../helpers/wait.js';

type Json = Record<string, unknown>;

const hasPostgres = await postgresAvailable();

/** A line the simulator answers in about 4 s: 200 tokens, 20 ms apart. */
const LINE_TOKENS = 200;
const ITL_MS = 20;
const longLine = (i: number): Json => ({
  model: 'sim-chat',
  max_tokens: LINE_TOKENS,
  // The simulator's answer ends after 16 tokens unless told to go on to the limit.
  ignore_eos: true,
  messages: [{ role: 'user', content: `Tell a long story, number ${i}` }],
});

/**
 * Work with no client stops when its key or model does, wherever it runs: the key revoked behind
 * the gateway's back (in the database, as another replica's operator API would), the batch's lines
 * in flight are aborted and billed their prompt, and the rest end as error lines, billed nothing.
 */
describe.skipIf(!hasPostgres)('a batch whose key is revoked while it runs', () => {
  let gateway: TestGateway;
  let client: OpenAI;
  let reader: OpenAI;
  let keyId: string;

  beforeAll(async () => {
    gateway = await startTestGateway('postgres', {
      TOLLGATE_BATCHES_CONCURRENCY: '16',
      TOLLGATE_SIM_TTFT_MS: '30',
      TOLLGATE_SIM_ITL_MS: String(ITL_MS),
    });
    const tenant = await gateway.tenant({ credit: '100.00', key: { requestsPerMinute: 100_000, maxConcurrency: 100 } });
    keyId = tenant.keyId;
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    // Another key of the organization reads the batch once the first is revoked.
    const other = await gateway.services.keys.create({ orgId: tenant.orgId, name: 'reader' });
    reader = new OpenAI({ baseURL: gateway.baseURL, apiKey: other.secret, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
  });

  it('stops its lines: none answered later than half a line after the revoke, the rest error lines', async () => {
    const created = await startBatch(client, batchFile(64, '/v1/chat/completions', longLine), '/v1/chat/completions');
    const { db } = gateway.services;
    const running = () =>
      db
        .select({ n: sql<number>`count(*)::int` })
        .from(usageRecords)
        .where(eq(usageRecords.batchId, created.id));
    // Lines under way at the engine: the first ones are about half-way through when the key goes.
    await until('the batch runs its lines', async () => gateway.services.batches.runner.size >= 8, {
      timeout: 30_000,
      interval: 20,
    });
    await new Promise((resolve) => setTimeout(resolve, (LINE_TOKENS * ITL_MS) / 2));
    expect((await running())[0]!.n).toBe(0);
    const revokedAt = Date.now();
    await db.execute(sql`update api_keys set revoked_at = now() where id = ${keyId}`);

    await until('every line has ended', async () => gateway.services.batches.runner.size === 0, {
      timeout: 30_000,
      interval: 50,
    });
    await gateway.charged(10_000);
    const records = await db.select().from(usageRecords).where(eq(usageRecords.batchId, created.id));
    expect(records.length).toBeGreaterThan(0);
    for (const record of records) {
      // A line that went on would end about half a line (2 s) after the revoke, or later.
      expect(record.createdAt.getTime() - revokedAt).toBeLessThan((LINE_TOKENS * ITL_MS) / 2);
      expect(record.status).toBe(499);
      expect(record.completionTokens).toBe(0);
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
