import { eq, inArray } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { ledgerEntries, usageRecords } from '../../../src/shared/db/schema.js';
import { batchFile, ended, engineCounts, resultLines, startBatch } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

type Json = Record<string, unknown>;

const GOOD_LINES = 20;

const responsesLine = (i: number): Json => ({
  model: 'sim-chat',
  max_output_tokens: 12,
  input: `Question number ${i}`,
});

/**
 * `/v1/responses` as a batch endpoint, through the official `openai` SDK: each line a Responses
 * request of the batch's organization, answered as the route answers it (the Response object),
 * billed at the engine's counts and the batch price; a streamed, a background, a bad line and one
 * naming another organization's response are error lines, never a failed batch.
 */
describe('/v1/batches of /v1/responses', () => {
  let sim: RunningSimulator;
  let gateway: TestGateway;
  let client: OpenAI;
  let other: OpenAI;
  const price = { in: 0n, out: 0n };

  beforeAll(async () => {
    sim = await startSimulator({ models: [{ name: 'sim-chat', task: 'chat' }], itlMs: 1 });
    gateway = await startTestGateway(
      'pglite',
      { TOLLGATE_BATCHES_CONCURRENCY: '8' },
      { engines: { 'sim-chat': sim.url } },
    );
    const { catalog } = gateway.services;
    const row = await catalog.getPrice('sim-chat');
    // Half the input price, a third of the output price: never the usual price by accident.
    const batchPrices = { batchInputPerToken: row.inputPerToken / 2n, batchOutputPerToken: row.outputPerToken / 3n };
    await catalog.setPrice('sim-chat', row.inputPerToken, row.outputPerToken, batchPrices);
    price.in = batchPrices.batchInputPerToken;
    price.out = batchPrices.batchOutputPerToken;
    const key = { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 };
    const mine = await gateway.tenant({ credit: '100.00', key });
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: mine.secret, maxRetries: 0 });
    const theirs = await gateway.tenant({ credit: '10.00', key });
    other = new OpenAI({ baseURL: gateway.baseURL, apiKey: theirs.secret, maxRetries: 0 });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await sim?.close();
  });

  let batchId = '';
  let outputFileId = '';

  it('runs a batch of Responses lines: one result a custom_id, billed at the engine counts and the batch price', async () => {
    const mineFirst = await client.responses.create({ model: 'sim-chat', input: 'Remember 7.', max_output_tokens: 8 });
    const theirsFirst = await other.responses.create({ model: 'sim-chat', input: 'Secret.', max_output_tokens: 8 });
    const theirConversation = await other.conversations.create({ items: [{ role: 'user', content: 'Secret.' }] });
    const myConversation = await client.conversations.create({});
    const before = await engineCounts(sim.url, 'sim-chat');
    const good = batchFile(GOOD_LINES, '/v1/responses', (i) => {
      const body = responsesLine(i);
      if (i === 3) body.instructions = 'Answer briefly.';
      if (i === 5) body.previous_response_id = mineFirst.id;
      if (i === 7) body.store = false;
      if (i === 9) body.conversation = myConversation.id;
      return body;
    });
    const bad = (prefix: string, extra: Json) =>
      batchFile(1, '/v1/responses', (i) => ({ ...responsesLine(i), ...extra }), prefix);
    const unknownId = `resp_${'0'.repeat(48)}`;
    const unknownConversation = `conv_${'0'.repeat(48)}`;
    const file = Buffer.concat([
      good,
      bad('streamed', { stream: true }),
      bad('background', { background: true }),
      bad('bad', { max_output_tokens: 0 }),
      bad('foreign', { previous_response_id: theirsFirst.id }),
      bad('unknown', { previous_response_id: unknownId }),
      bad('foreign-conversation', { conversation: theirConversation.id }),
      bad('unknown-conversation', { conversation: unknownConversation }),
    ]);
    const created = await startBatch(client, file, '/v1/responses');
    expect(created).toMatchObject({ object: 'batch', endpoint: '/v1/responses' });
    const batch = await ended(client, created.id);
    batchId = batch.id;
    outputFileId = batch.output_file_id!;
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: GOOD_LINES + 7, completed: GOOD_LINES, failed: 7 });

    const results = await resultLines(client, batch.output_file_id);
    const errors = await resultLines(client, batch.error_file_id);
    const ids = [...results, ...errors].map((line) => line.custom_id as string);
    expect(new Set(ids).size).toBe(ids.length);
    expect(results.map((line) => line.custom_id).sort()).toEqual(
      Array.from({ length: GOOD_LINES }, (_, i) => `req-${i + 1}`).sort(),
    );

    await gateway.charged(10_000);
    const { db } = gateway.services;
    const records = await db.select().from(usageRecords).where(eq(usageRecords.batchId, batch.id));
    expect(records).toHaveLength(GOOD_LINES);
    const recordById = new Map(records.map((record) => [record.id, record]));
    const ledger = await db
      .select({ requestId: ledgerEntries.requestId, amount: ledgerEntries.amount })
      .from(ledgerEntries)
      .where(inArray(ledgerEntries.requestId, [...recordById.keys()]));
    const charged = new Map(ledger.map((entry) => [entry.requestId, entry.amount]));
    const answered = { requests: 0, promptTokens: 0, completionTokens: 0 };
    const byCustomId = new Map<string, Json>();
    for (const line of results) {
      const response = line.response as { status_code: number; request_id: string; body: Json };
      expect(response.status_code).toBe(200);
      const body = response.body;
      byCustomId.set(line.custom_id as string, body);
      expect(body).toMatchObject({ object: 'response', model: 'sim-chat', background: false });
      expect(['completed', 'incomplete']).toContain(body.status);
      expect(body.id).toMatch(/^resp_/);
      const usage = body.usage as { input_tokens: number; output_tokens: number; total_tokens: number };
      expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
      const record = recordById.get(response.request_id);
      expect(record, `${line.custom_id as string}'s usage record`).toBeDefined();
      expect(record).toMatchObject({
        endpoint: 'responses',
        batchId: batch.id,
        promptTokens: usage.input_tokens,
        completionTokens: usage.output_tokens,
        cachedTokens: 0,
      });
      const cost = BigInt(usage.input_tokens) * price.in + BigInt(usage.output_tokens) * price.out;
      expect(record!.cost).toBe(cost);
      expect(charged.get(response.request_id)).toBe(-cost);
      answered.requests += 1;
      answered.promptTokens += usage.input_tokens;
      answered.completionTokens += usage.output_tokens;
    }
    // The engine's own counts: each good line reached it once; no error line reached it.
    const after = await engineCounts(sim.url, 'sim-chat');
    expect({
      requests: after.requests - before.requests,
      promptTokens: after.promptTokens - before.promptTokens,
      completionTokens: after.completionTokens - before.completionTokens,
    }).toEqual(answered);

    // The Response object as the route answers it: stored unless `store: false`, continued within
    // the organization.
    const stored = byCustomId.get('req-1')!;
    expect(await client.responses.retrieve(stored.id as string)).toMatchObject({
      id: stored.id,
      output: stored.output,
    });
    await expect(other.responses.retrieve(stored.id as string)).rejects.toMatchObject({ status: 404 });
    expect(byCustomId.get('req-3')!.instructions).toBe('Answer briefly.');
    expect(byCustomId.get('req-5')!.previous_response_id).toBe(mineFirst.id);
    const continued = byCustomId.get('req-5')!.usage as { input_tokens: number };
    const alone = byCustomId.get('req-4')!.usage as { input_tokens: number };
    expect(continued.input_tokens).toBeGreaterThan(alone.input_tokens);
    const unstored = byCustomId.get('req-7')!;
    expect(unstored.store).toBe(false);
    expect(stored.store).toBe(true);
    await expect(client.responses.retrieve(unstored.id as string)).rejects.toMatchObject({ status: 404 });

    const errorOf = (customId: string) => {
      const line = errors.find((row) => row.custom_id === customId)!;
      const response = line.response as { status_code: number; body: { error: { code: string; message: string } } };
      return { status: response.status_code, ...response.body.error };
    };
    expect(errors).toHaveLength(7);
    expect(errorOf('streamed-1')).toMatchObject({ status: 400, message: expect.stringMatching(/stream/) });
    expect(errorOf('background-1')).toMatchObject({ status: 400, message: expect.stringMatching(/background/) });
    expect(errorOf('bad-1')).toMatchObject({ status: 400, message: expect.stringMatching(/max_output_tokens/) });
    // Another organization's response is as unknown as one never made: the same 404, nothing of it.
    const foreign = errorOf('foreign-1');
    const unknown = errorOf('unknown-1');
    expect(foreign.status).toBe(404);
    expect({ ...foreign, message: foreign.message.replace(theirsFirst.id, 'ID') }).toEqual({
      ...unknown,
      message: unknown.message.replace(unknownId, 'ID'),
    });
    const foreignConversation = errorOf('foreign-conversation-1');
    const unknownConversationError = errorOf('unknown-conversation-1');
    expect(foreignConversation.status).toBe(404);
    expect({
      ...foreignConversation,
      message: foreignConversation.message.replace(theirConversation.id, 'ID'),
    }).toEqual({
      ...unknownConversationError,
      message: unknownConversationError.message.replace(unknownConversation, 'ID'),
    });
    expect(JSON.stringify(errors)).not.toContain('Secret');
    // A line's turn is appended to its own organization's conversation, as the route's is.
    const items = await client.conversations.items.list(myConversation.id);
    expect(items.data.map((item) => item.type)).toEqual(['message', 'message']);
  }, 90_000);

  it("answers 404 for another organization's Responses batch and its output", async () => {
    expect(batchId).not.toBe('');
    await expect(other.batches.retrieve(batchId)).rejects.toMatchObject({ status: 404 });
    await expect(other.batches.cancel(batchId)).rejects.toMatchObject({ status: 404 });
    await expect(other.files.content(outputFileId)).rejects.toMatchObject({ status: 404 });
    expect((await other.batches.list()).data).toEqual([]);
  });
});
