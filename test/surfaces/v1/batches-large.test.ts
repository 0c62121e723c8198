import { eq, inArray } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerEntries, usageRecords } from '../../../src/shared/db/schema.js';
import { batchFile, chatLine, embedLine, ended, engineCounts, resultLines, startBatch } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { freePort, repoRoot, startChild, type TestChild, waitForHealth } from '../../helpers/processes.js';
import { postgresAvailable } from '../../helpers/services.js';

type Json = Record<string, unknown>;

const hasPostgres = await postgresAvailable();

const CHAT_LINES = 10_000;
const EMBED_LINES = 2_000;

/**
 * Issue 72's target, through the official `openai` SDK on PostgreSQL with the simulator fleet (the
 * simulator a process of its own, no delay a token): a 10,000-line chat batch and a 2,000-line
 * embeddings batch complete; every custom_id has exactly one result line; each usage record equals
 * the engine's counts for its line (the usage the engine answered it, in its result line, and the
 * engine's own totals); the ledger charges each line its record's cost, the engine's counts at the
 * batch price of /v1/pricing, to the nano-unit.
 */
describe.skipIf(!hasPostgres)('large batches on PostgreSQL', () => {
  let sim: TestChild;
  let simUrl: string;
  let gateway: TestGateway;
  let client: OpenAI;
  const price = new Map<string, { input: bigint; output: bigint }>();

  beforeAll(async () => {
    const port = await freePort();
    simUrl = `http://127.0.0.1:${port}`;
    const args = ['dist/sim/main.js', '--port', String(port), '--model', 'sim-chat', '--model', 'sim-embed:embedding'];
    sim = startChild('simulator', process.execPath, args, { cwd: repoRoot, env: { PATH: process.env.PATH } });
    await waitForHealth(sim, `${simUrl}/health`);
    gateway = await startTestGateway(
      'postgres',
      { TOLLGATE_BATCHES_CONCURRENCY: '256' },
      { engines: { 'sim-chat': simUrl, 'sim-embed': simUrl } },
    );
    for (const id of ['sim-chat', 'sim-embed']) {
      const row = await gateway.services.catalog.getPrice(id);
      await gateway.services.catalog.setPrice(id, row.inputPerToken, row.outputPerToken, {
        batchInputPerToken: row.inputPerToken / 2n,
        batchOutputPerToken: row.outputPerToken / 2n,
      });
    }
    // Batch lines pass through the key's limits like any request: this key's allow 12,000 lines.
    const tenant = await gateway.tenant({
      credit: '100.00',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 10_000 },
    });
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    // The batch price as the public price list shows it, in nano-units a token.
    const list = (await client.get('/pricing')) as { data: Json[] };
    for (const row of list.data)
      price.set(row.model as string, {
        input: BigInt(row.batch_input_nanos_per_token as string),
        output: BigInt(row.batch_output_nanos_per_token as string),
      });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    await sim?.stop();
  });

  /**
   * Every line's checks: one result a custom_id, records at the engine's counts, the ledger's
   * charge.
   */
  async function checkBatch(batchId: string, outputFileId: string | null | undefined, lines: number, model: string) {
    const results = await resultLines(client, outputFileId);
    expect(results).toHaveLength(lines);
    const ids = results.map((line) => line.custom_id as string);
    expect(new Set(ids).size).toBe(lines);
    expect(ids.sort()).toEqual(Array.from({ length: lines }, (_, i) => `req-${i + 1}`).sort());
    await gateway.charged(30_000);
    const { db } = gateway.services;
    const records = await db.select().from(usageRecords).where(eq(usageRecords.batchId, batchId));
    expect(records).toHaveLength(lines);
    const recordById = new Map(records.map((row) => [row.id, row]));
    const ledger = await db
      .select({ requestId: ledgerEntries.requestId, amount: ledgerEntries.amount })
      .from(ledgerEntries)
      .where(inArray(ledgerEntries.requestId, [...recordById.keys()]));
    expect(ledger).toHaveLength(lines);
    const charged = new Map(ledger.map((entry) => [entry.requestId, entry.amount]));
    const batchPrice = price.get(model)!;
    const engine = { requests: 0, promptTokens: 0, completionTokens: 0 };
    for (const line of results) {
      const response = line.response as { status_code: number; request_id: string; body: Json };
      expect(response.status_code).toBe(200);
      const usage = response.body.usage as { prompt_tokens: number; completion_tokens?: number };
      const answered = { prompt: usage.prompt_tokens, completion: usage.completion_tokens ?? 0 };
      const row = recordById.get(response.request_id);
      expect(row, `${line.custom_id as string}'s usage record`).toBeDefined();
      expect({ prompt: row!.promptTokens, completion: row!.completionTokens, cached: row!.cachedTokens }).toEqual({
        ...answered,
        cached: 0,
      });
      const cost = BigInt(answered.prompt) * batchPrice.input + BigInt(answered.completion) * batchPrice.output;
      expect(row!.cost).toBe(cost);
      expect(charged.get(response.request_id)).toBe(-cost);
      engine.requests += 1;
      engine.promptTokens += answered.prompt;
      engine.completionTokens += answered.completion;
    }
    // The engine's own counts: each line reached it once, and it produced what the lines were
    // billed.
    expect(await engineCounts(simUrl, model)).toEqual(engine);
  }

  it(`runs a ${CHAT_LINES}-line chat batch: one result a custom_id, each line billed once at the engine's counts`, async () => {
    const created = await startBatch(
      client,
      batchFile(CHAT_LINES, '/v1/chat/completions', chatLine),
      '/v1/chat/completions',
    );
    const batch = await ended(client, created.id, 100_000);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: CHAT_LINES, completed: CHAT_LINES, failed: 0 });
    expect(batch.error_file_id).toBeNull();
    await checkBatch(batch.id, batch.output_file_id, CHAT_LINES, 'sim-chat');
  }, 115_000);

  it(`runs a ${EMBED_LINES}-line embeddings batch the same way`, async () => {
    const created = await startBatch(client, batchFile(EMBED_LINES, '/v1/embeddings', embedLine), '/v1/embeddings');
    const batch = await ended(client, created.id, 60_000);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: EMBED_LINES, completed: EMBED_LINES, failed: 0 });
    await checkBatch(batch.id, batch.output_file_id, EMBED_LINES, 'sim-embed');
  }, 90_000);
});
