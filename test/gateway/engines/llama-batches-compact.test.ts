import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchPrice, type TokenPrice } from '../../../src/gateway/billing/money.js';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { batchFile, ended, resultLines, startBatch } from '../../helpers/batches.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import {
  type Exchange,
  llamaServerMissing,
  type LlamaServer,
  recordingProxy,
  reportedUsage,
  startLlamaServer,
} from '../../helpers/llama-server.js';
import { skippedWithout } from '../../helpers/skips.js';
import { until } from '../../helpers/wait.js';

type Json = Record<string, unknown>;

/**
 * Batches (issue 72) and compaction (issue 71) on llama.cpp's own server, not the simulator: a chat
 * batch and a Responses batch through the official SDK, each line's usage record equal to what the
 * engine reported for that line (read at the engine, through a recording proxy) and charged at the
 * batch price to the nano-unit, a bad line never reaching the engine; a compaction answered in
 * OpenAI's shape and billed as the engine reported.
 */
const missing = llamaServerMissing();
skippedWithout(missing);

describe.skipIf(missing !== null)("batches and compaction on llama.cpp's server", () => {
  let server: LlamaServer;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let dir: string;
  let gateway: TestGateway;
  let client: OpenAI;
  let secret: string;
  let price: TokenPrice;

  beforeAll(async () => {
    server = await startLlamaServer('llama-batches', ['--parallel', '2']);
    proxy = await recordingProxy(server.url);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-llama-batches-'));
    const file = path.join(dir, 'engines.json');
    await writeFile(file, JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', urls: [proxy.url] }] }));
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: file, TOLLGATE_ENGINE_POLL_MS: '200' });
    const { catalog } = gateway.services;
    const row = await catalog.getPrice('sim-chat');
    await catalog.setPrice('sim-chat', row.inputPerToken, row.outputPerToken, {
      batchInputPerToken: row.inputPerToken / 2n,
      batchOutputPerToken: row.outputPerToken / 3n,
    });
    // What a batch line is charged a token: the batch prices, the cached prompt at the lower one.
    price = batchPrice(await catalog.getPrice('sim-chat'));
    const tenant = await gateway.tenant({ credit: '50.00', key: { maxConcurrency: 100 } });
    secret = tenant.secret;
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    await until('the llama-server replica is ready', () =>
      gateway.services.fleet.status().some((e) => e.model === 'sim-chat' && e.replicas[0]?.state === 'ready'),
    );
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    proxy?.close();
    await server?.child.stop('SIGTERM');
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /**
   * Runs a batch of `good` lines and one line of another url; checks each good line against the
   * engine's own answer to it (found by the line's `marker` in the request the engine was sent).
   */
  async function runAndCheck(
    endpoint: '/v1/chat/completions' | '/v1/responses',
    body: (marker: string) => Json,
    good: number,
  ) {
    const seen = proxy.exchanges.length;
    const lines = batchFile(good, endpoint, (i) => body(`line-marker-${i}.`)).toString();
    const bad = JSON.stringify({ custom_id: 'bad-1', method: 'POST', url: '/v1/embeddings', body: {} });
    const created = await startBatch(client, Buffer.from(`${lines}${bad}\n`), endpoint);
    const batch = await ended(client, created.id, 120_000);
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: good + 1, completed: good, failed: 1 });
    const results = await resultLines(client, batch.output_file_id);
    expect(results.map((line) => line.custom_id).sort()).toEqual(
      Array.from({ length: good }, (_, i) => `req-${i + 1}`).sort(),
    );
    await gateway.charged(10_000);
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.batchId, batch.id));
    expect(records).toHaveLength(good);
    const byRequest = new Map(records.map((record) => [record.id, record]));
    // Each good line reached the engine once; the bad one never did.
    const exchanges = proxy.exchanges.slice(seen).filter((e) => e.path.startsWith('/v1/'));
    expect(exchanges).toHaveLength(good);
    for (const line of results) {
      const marker = `line-marker-${String(line.custom_id).slice('req-'.length)}.`;
      const sent = exchanges.filter((exchange: Exchange) => exchange.request.includes(marker));
      expect(sent).toHaveLength(1);
      const reported = reportedUsage(sent[0]!)!;
      const response = line.response as { status_code: number; request_id: string; body: Json };
      expect(response.status_code).toBe(200);
      const record = byRequest.get(response.request_id)!;
      expect({ prompt: record.promptTokens, completion: record.completionTokens }).toEqual({
        prompt: reported.prompt_tokens,
        completion: reported.completion_tokens,
      });
      expect(record.cachedTokens).toBe(reported.prompt_tokens_details?.cached_tokens ?? 0);
      const uncached = BigInt(record.promptTokens - record.cachedTokens);
      expect(record.cost).toBe(
        uncached * price.inputPerToken +
          BigInt(record.cachedTokens) * price.cachedInputPerToken! +
          BigInt(record.completionTokens) * price.outputPerToken,
      );
    }
    return { results, records };
  }

  it('runs a chat batch: every line billed as the engine reported it, at the batch price', async () => {
    const { results } = await runAndCheck(
      '/v1/chat/completions',
      (marker) => ({ model: 'sim-chat', max_tokens: 8, messages: [{ role: 'user', content: `Say ${marker}` }] }),
      6,
    );
    for (const line of results) {
      const body = (line.response as { body: Json }).body;
      expect(body).toMatchObject({ object: 'chat.completion', model: 'sim-chat' });
      // Nothing of the engine's own in the answer.
      expect(body).not.toHaveProperty('timings');
    }
  }, 180_000);

  it('runs a Responses batch the same way: each result a Response object', async () => {
    const { results, records } = await runAndCheck(
      '/v1/responses',
      (marker) => ({ model: 'sim-chat', max_output_tokens: 8, input: `Say ${marker}`, store: false }),
      3,
    );
    for (const line of results) {
      const body = (line.response as { body: Json }).body;
      expect(body).toMatchObject({ object: 'response', model: 'sim-chat' });
      expect(body).not.toHaveProperty('timings');
    }
    expect(records.every((record) => record.endpoint === 'responses')).toBe(true);
  }, 180_000);

  it('compacts a session on the engine: the compaction item, billed as the engine reported', async () => {
    const seen = proxy.exchanges.length;
    const message = (role: string, type: string, text: string) => ({
      type: 'message',
      role,
      content: [{ type, text }],
    });
    const answer = await fetch(`${gateway.baseURL}/responses/compact`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sim-chat',
        max_output_tokens: 16,
        input: [
          message('user', 'input_text', 'Fix the failing test in src/parse.ts.'),
          message('assistant', 'output_text', 'The parser splits on commas; the test expects semicolons.'),
        ],
      }),
    });
    const compacted = (await answer.json()) as Json & { output: Json[]; usage: Json };
    expect(answer.status, JSON.stringify(compacted)).toBe(200);
    expect(compacted).toMatchObject({ object: 'response.compaction' });
    expect(compacted.output.map((item) => item.type)).toEqual(['message', 'compaction']);
    await gateway.charged(10_000);
    const [record] = await gateway.services.db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.id, answer.headers.get('x-request-id')!));
    const exchanges = proxy.exchanges.slice(seen).filter((e) => e.path.startsWith('/v1/'));
    expect(exchanges).toHaveLength(1);
    const reported = reportedUsage(exchanges[0]!)!;
    expect(record).toMatchObject({
      endpoint: 'responses.compact',
      promptTokens: reported.prompt_tokens,
      completionTokens: reported.completion_tokens,
    });
    expect(compacted.usage).toMatchObject({
      input_tokens: reported.prompt_tokens,
      output_tokens: reported.completion_tokens,
    });
  }, 60_000);
});
