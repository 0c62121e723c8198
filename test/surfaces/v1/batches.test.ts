import { eq, inArray, sql } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batches } from '../../../src/shared/db/batches-schema.js';
import { ledgerEntries, usageDaily, usageRecords } from '../../../src/shared/db/schema.js';
import { batchFile, chatLine, embedLine, ended, resultLines, startBatch } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

type Json = Record<string, unknown>;

/**
 * Batches through the official `openai` SDK on the simulator: every line answered once, billed at
 * the engine's counts and the batch price under its own request id, the ledger equal to the
 * records to the nano-unit; another organization sees none of it.
 */
describe('/v1/batches', () => {
  let gateway: TestGateway;
  let client: OpenAI;
  let other: OpenAI;
  let orgId: string;
  const price = { chat: { in: 0n, out: 0n }, embed: { in: 0n, out: 0n } };

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', {
      TOLLGATE_BATCHES_CONCURRENCY: '16',
      TOLLGATE_SIM_TTFT_MS: '30',
      TOLLGATE_SIM_ITL_MS: '2',
    });
    const { catalog } = gateway.services;
    for (const [name, id] of [
      ['chat', 'sim-chat'],
      ['embed', 'sim-embed'],
    ] as const) {
      const row = await catalog.getPrice(id);
      // The batch price: half the input price, and a third of the output price (never rounded
      // away).
      const half = { batchInputPerToken: row.inputPerToken / 2n, batchOutputPerToken: row.outputPerToken / 3n };
      await catalog.setPrice(id, row.inputPerToken, row.outputPerToken, half);
      price[name] = { in: half.batchInputPerToken, out: half.batchOutputPerToken };
    }
    const key = { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 };
    const mine = await gateway.tenant({ credit: '100.00', key });
    orgId = mine.orgId;
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: mine.secret, maxRetries: 0 });
    const theirs = await gateway.tenant({ key });
    other = new OpenAI({ baseURL: gateway.baseURL, apiKey: theirs.secret, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
  });

  async function recordsOf(batchId: string) {
    await gateway.charged(10_000);
    return gateway.services.db.select().from(usageRecords).where(eq(usageRecords.batchId, batchId));
  }

  /** Waits for a batch to have answered a few lines. */
  function someDone(id: string) {
    return until(
      'some lines are done',
      async () => ((await client.batches.retrieve(id)).request_counts?.completed ?? 0) > 0,
      { timeout: 30_000, interval: 50 },
    );
  }

  it('runs a 200-line chat batch: one result per custom_id, records at the engine counts and the batch price', async () => {
    const created = await startBatch(client, batchFile(200, '/v1/chat/completions', chatLine), '/v1/chat/completions');
    expect(created).toMatchObject({ object: 'batch', status: 'validating', completion_window: '24h' });
    const batch = await ended(client, created.id);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 200, completed: 200, failed: 0 });
    expect(batch.error_file_id).toBeNull();
    const results = await resultLines(client, batch.output_file_id);
    expect(results.map((line) => line.custom_id).sort()).toEqual(
      Array.from({ length: 200 }, (_, i) => `req-${i + 1}`).sort(),
    );
    const records = await recordsOf(batch.id);
    expect(records).toHaveLength(200);
    const byId = new Map(records.map((record) => [record.id, record]));
    for (const line of results) {
      const response = line.response as { status_code: number; request_id: string; body: Json };
      expect(response.status_code).toBe(200);
      const usage = response.body.usage as { prompt_tokens: number; completion_tokens: number };
      const record = byId.get(response.request_id)!;
      expect(record).toMatchObject({ promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens });
      expect(record.cost).toBe(
        BigInt(usage.prompt_tokens) * price.chat.in + BigInt(usage.completion_tokens) * price.chat.out,
      );
    }
    const [ledger] = await gateway.services.db
      .select({ total: sql<string>`coalesce(sum(${ledgerEntries.amount}), 0)::text` })
      .from(ledgerEntries)
      .where(inArray(ledgerEntries.requestId, [...byId.keys()]));
    const charged = records.reduce((sum, record) => sum + record.cost, 0n);
    expect(BigInt(ledger!.total)).toBe(-charged);
    const [daily] = await gateway.services.db
      .select({ requests: sql<string>`sum(${usageDaily.requests})::text` })
      .from(usageDaily)
      .where(sql`${usageDaily.orgId} = ${orgId} and ${usageDaily.batch}`);
    expect(Number(daily!.requests)).toBeGreaterThanOrEqual(200);
    expect(batch.usage).toMatchObject({
      input_tokens: records.reduce((sum, record) => sum + record.promptTokens, 0),
      output_tokens: records.reduce((sum, record) => sum + record.completionTokens, 0),
    });
  }, 60_000);

  it('runs an embeddings batch, and makes a line of another url an error line', async () => {
    const file = batchFile(60, '/v1/embeddings', embedLine);
    const mixed = Buffer.concat([file, batchFile(1, '/v1/chat/completions', chatLine, 'wrong-url')]);
    const batch = await ended(client, (await startBatch(client, mixed, '/v1/embeddings')).id);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 61, completed: 60, failed: 1 });
    const results = await resultLines(client, batch.output_file_id);
    expect(new Set(results.map((line) => line.custom_id)).size).toBe(60);
    const errors = await resultLines(client, batch.error_file_id);
    expect(errors).toEqual([expect.objectContaining({ custom_id: 'wrong-url-1', response: null })]);
    expect(errors[0]!.error).toMatchObject({ code: 'invalid_url' });
    const records = await recordsOf(batch.id);
    expect(records).toHaveLength(60);
    for (const record of records) expect(record.cost).toBe(BigInt(record.promptTokens) * price.embed.in);
  }, 60_000);

  it("answers 404 for another organization's batch and its output, and lists none of it", async () => {
    const batch = await ended(
      client,
      (await startBatch(client, batchFile(3, '/v1/embeddings', embedLine), '/v1/embeddings')).id,
    );
    await expect(other.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.batches.cancel(batch.id)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.content(batch.output_file_id!)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.retrieve(batch.output_file_id!)).rejects.toMatchObject({ status: 404 });
    expect((await other.batches.list()).data).toEqual([]);
    await expect(other.batches.list({ after: batch.id })).rejects.toMatchObject({ status: 400 });
    // Nor may another organization make a batch of this one's file.
    await expect(
      other.batches.create({
        input_file_id: batch.input_file_id,
        endpoint: '/v1/embeddings',
        completion_window: '24h',
      }),
    ).rejects.toMatchObject({ status: 404 });
    // Its owner reads it, in OpenAI's shape, and finds it listed.
    expect((await client.files.retrieve(batch.output_file_id!)).purpose).toBe('batch_output');
    expect((await client.batches.list({ limit: 100 })).data.map((b) => b.id)).toContain(batch.id);
  }, 60_000);

  it('refuses a bad window, endpoint or file with a clear error', async () => {
    const file = await client.files.create({
      file: new File([batchFile(1, '/v1/embeddings', embedLine)], 'a.jsonl'),
      purpose: 'batch',
    });
    const make = (body: Json) => client.batches.create(body as never);
    await expect(
      make({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '1h' }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      make({ input_file_id: file.id, endpoint: '/v1/images', completion_window: '24h' }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(
      make({ input_file_id: 'file-nope', endpoint: '/v1/embeddings', completion_window: '24h' }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('cancels a running batch: cancelled, its done lines delivered, the rest error lines', async () => {
    const created = await startBatch(
      client,
      batchFile(400, '/v1/chat/completions', chatLine, 'c'),
      '/v1/chat/completions',
    );
    await someDone(created.id);
    const cancelling = await client.batches.cancel(created.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const batch = await ended(client, created.id);
    expect(batch.status).toBe('cancelled');
    const done = await resultLines(client, batch.output_file_id);
    const errors = await resultLines(client, batch.error_file_id);
    expect(done.length + errors.length).toBe(batch.request_counts!.total);
    expect(new Set([...done, ...errors].map((line) => line.custom_id)).size).toBe(batch.request_counts!.total);
    expect(errors.length).toBeGreaterThan(0);
    expect((await recordsOf(batch.id)).filter((record) => record.status === 200)).toHaveLength(done.length);
  }, 60_000);

  it('expires a batch past its window: its done lines delivered, the rest batch_expired', async () => {
    const created = await startBatch(
      client,
      batchFile(300, '/v1/chat/completions', chatLine, 'e'),
      '/v1/chat/completions',
    );
    await someDone(created.id);
    await gateway.services.db
      .update(batches)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(batches.id, created.id));
    const batch = await ended(client, created.id);
    expect(batch.status).toBe('expired');
    const done = await resultLines(client, batch.output_file_id);
    const errors = await resultLines(client, batch.error_file_id);
    expect(done.length + errors.length).toBe(batch.request_counts!.total);
    expect(errors.some((line) => (line.error as Json | null)?.code === 'batch_expired')).toBe(true);
  }, 60_000);
  it('runs what a small wallet pays for: those lines billed, the rest insufficient_quota, the wallet never below zero', async () => {
    const poor = await gateway.tenant({
      credit: '0.00005',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 },
    });
    const poorClient = new OpenAI({ baseURL: gateway.baseURL, apiKey: poor.secret, maxRetries: 0 });
    const created = await startBatch(
      poorClient,
      batchFile(30, '/v1/chat/completions', chatLine, 'p'),
      '/v1/chat/completions',
    );
    const batch = await ended(poorClient, created.id);
    expect(batch.status).toBe('completed');
    const { completed, failed, total } = batch.request_counts!;
    expect(total).toBe(30);
    expect(completed).toBeGreaterThan(0);
    expect(failed).toBeGreaterThan(0);
    expect(completed + failed).toBe(30);
    const errors = await resultLines(poorClient, batch.error_file_id);
    expect(errors).toHaveLength(failed);
    for (const line of errors) expect(line.error).toMatchObject({ code: 'insufficient_quota' });
    const records = await recordsOf(batch.id);
    expect(records.filter((record) => record.status === 200)).toHaveLength(completed);
    const balance = await gateway.services.wallets.balance(poor.orgId);
    expect(balance).toBeGreaterThanOrEqual(0n);
    const charged = records.reduce((sum, record) => sum + record.cost, 0n);
    expect(balance).toBe(50_000n - charged);
  }, 60_000);
});
