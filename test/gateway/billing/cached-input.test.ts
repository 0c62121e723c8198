import Anthropic from '@anthropic-ai/sdk';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { type Exchange, recordingProxy } from '../../helpers/llama-server.js';

/**
 * Cached input, billed exactly: the loaded simulator (a vLLM with a prefix
 * cache) behind the real gateway, behind a proxy that records what the engine
 * reported. A conversation's second turn shares its long first part with the
 * first turn, so the engine reads most of it from its prefix cache; the usage
 * record keeps the engine's cached count, and the charge is uncached × input
 * + cached × cached input + output, to the nano-unit. The same through
 * /v1/responses and /v1/messages with the official SDKs, each usage object in
 * its protocol's convention.
 */

const INPUT = 150n; // 0.15 per million tokens
const CACHED_INPUT = 15n; // 0.015
const OUTPUT = 600n; // 0.60

/** A system prompt of about 1,500 tokens, the part every turn shares. */
const SYSTEM = Array.from({ length: 1500 }, (_, i) => `rule${i}`).join(' ');

type EngineUsage = {
  prompt_tokens: number;
  completion_tokens: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
};

/** The engine's last usage in an exchange (the JSON answer's, or the stream's final chunk's). */
function engineUsage(exchange: Exchange): EngineUsage {
  const texts = exchange.response.trimStart().startsWith('{')
    ? [exchange.response]
    : exchange.response
        .split('\n')
        .filter((line) => line.startsWith('data: {'))
        .map((line) => line.slice(6));
  const usages = texts.map((text) => (JSON.parse(text) as { usage?: EngineUsage }).usage).filter((u) => u);
  return usages.at(-1)!;
}

describe('cached input, priced apart', () => {
  let sim: RunningSimulator;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let dir: string;
  let gateway: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  let orgId: string;

  beforeAll(async () => {
    sim = await startSimulator({
      models: [{ name: 'sim-chat', task: 'chat', maxModelLen: 8192 }],
      loaded: { decodeMsPerStep: 0, decodeMsPerSeq: 0, prefillMsPerToken: 0 },
    });
    proxy = await recordingProxy(sim.url);
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-cached-'));
    const file = path.join(dir, 'engines.json');
    await writeFile(file, JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url: proxy.url }] }));
    gateway = await startTestGateway('pglite', { TOLLGATE_ENGINES_FILE: file });
    const put = await fetch(`${gateway.url}/admin/v1/prices/sim-chat`, {
      method: 'PUT',
      headers: { authorization: 'Bearer test-operator-token-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify({
        input_per_million: '0.15',
        cached_input_per_million: '0.015',
        output_per_million: '0.60',
      }),
    });
    expect(put.status).toBe(200);
    const { orgId: org, secret } = await gateway.tenant({ credit: '10.00' });
    orgId = org;
    openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gateway.url, apiKey: secret, maxRetries: 0 });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    proxy?.close();
    await sim?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  type UsageRow = typeof usageRecords.$inferSelect;
  const recordsOf = async (): Promise<UsageRow[]> =>
    (await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, orgId))).sort(
      (a, b) => a.createdAt.getTime() - b.createdAt.getTime(),
    );

  /** Runs `call`; returns what it returned, the engine's usage for it, and the usage record it left. */
  async function billed<T>(call: () => Promise<T>): Promise<{ result: T; engine: EngineUsage; record: UsageRow }> {
    const before = proxy.exchanges.length;
    const recordsBefore = (await recordsOf()).length;
    const result = await call();
    await gateway.charged(10_000);
    const fresh = proxy.exchanges.slice(before).filter((e) => e.path.startsWith('/v1/'));
    expect(fresh).toHaveLength(1);
    const records = await recordsOf();
    expect(records).toHaveLength(recordsBefore + 1);
    return { result, engine: engineUsage(fresh[0]!), record: records.at(-1)! };
  }

  /** The record keeps the engine's counts, and its cost is the cached-input rule's, exactly. */
  function expectBilledAtCachedRate({ engine, record }: { engine: EngineUsage; record: UsageRow }): number {
    const cached = engine.prompt_tokens_details?.cached_tokens ?? 0;
    expect(record.promptTokens).toBe(engine.prompt_tokens);
    expect(record.completionTokens).toBe(engine.completion_tokens);
    expect(record.cachedTokens).toBe(cached);
    expect(record.cost).toBe(
      BigInt(engine.prompt_tokens - cached) * INPUT +
        BigInt(cached) * CACHED_INPUT +
        BigInt(engine.completion_tokens) * OUTPUT,
    );
    return cached;
  }

  it('shows the cached-input price in /v1/pricing, and refuses one above the input price', async () => {
    const pricing = (await (await fetch(`${gateway.baseURL}/pricing`)).json()) as {
      data: Array<{ model: string; cached_input_per_million_tokens: string; cached_input_nanos_per_token: string }>;
    };
    const chat = pricing.data.find((p) => p.model === 'sim-chat')!;
    expect(chat.cached_input_per_million_tokens).toBe('0.015');
    expect(chat.cached_input_nanos_per_token).toBe('15');
    const above = await fetch(`${gateway.url}/admin/v1/prices/sim-chat`, {
      method: 'PUT',
      headers: { authorization: 'Bearer test-operator-token-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify({ input_per_million: '0.15', cached_input_per_million: '0.16', output_per_million: '0.60' }),
    });
    expect(above.status).toBe(400);
  });

  it('chat: the second turn of a conversation is billed at the cached rate for the tokens the engine had cached', async () => {
    const first: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'chat turn one' },
    ];
    const one = await billed(() =>
      openai.chat.completions.create({ model: 'sim-chat', messages: first, max_tokens: 8 }),
    );
    expectBilledAtCachedRate(one);
    const second: OpenAI.ChatCompletionMessageParam[] = [
      ...first,
      { role: 'assistant', content: one.result.choices[0]!.message.content ?? '' },
      { role: 'user', content: 'chat turn two' },
    ];
    const two = await billed(() =>
      openai.chat.completions.create({ model: 'sim-chat', messages: second, max_tokens: 8 }),
    );
    const cached = expectBilledAtCachedRate(two);
    // Most of the prompt came from the cache: the shared system prompt at least.
    expect(cached).toBeGreaterThan(1000);
    expect(cached).toBeLessThan(two.engine.prompt_tokens);
    // Chat keeps the engine's own details.
    expect(two.result.usage?.prompt_tokens_details?.cached_tokens).toBe(cached);
    expect(two.record.cost).toBeLessThan(
      BigInt(two.engine.prompt_tokens) * INPUT + BigInt(two.engine.completion_tokens) * OUTPUT,
    );
  });

  it('chat stream: billed from the final usage chunk, cached tokens included', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: 'a streamed question' },
    ];
    const streamed = await billed(async () => {
      const stream = await openai.chat.completions.create({
        model: 'sim-chat',
        messages,
        max_tokens: 8,
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) usage = chunk.usage ?? usage;
      return usage;
    });
    expect(expectBilledAtCachedRate(streamed)).toBeGreaterThan(1000);
    expect(streamed.result?.prompt_tokens_details?.cached_tokens).toBe(streamed.record.cachedTokens);
  });

  it('Responses: a continued conversation reports input_tokens_details.cached_tokens inside input_tokens', async () => {
    const one = await billed(() =>
      openai.responses.create({
        model: 'sim-chat',
        instructions: SYSTEM,
        input: 'responses turn one',
        max_output_tokens: 8,
      }),
    );
    expectBilledAtCachedRate(one);
    const two = await billed(() =>
      openai.responses.create({
        model: 'sim-chat',
        instructions: SYSTEM,
        previous_response_id: one.result.id,
        input: 'responses turn two',
        max_output_tokens: 8,
      }),
    );
    const cached = expectBilledAtCachedRate(two);
    expect(cached).toBeGreaterThan(1000);
    // OpenAI's convention: the cached tokens are counted in input_tokens too.
    expect(two.result.usage).toMatchObject({
      input_tokens: two.engine.prompt_tokens,
      input_tokens_details: { cached_tokens: cached },
      output_tokens: two.engine.completion_tokens,
      total_tokens: two.engine.prompt_tokens + two.engine.completion_tokens,
    });
    const streamed = await billed(async () => {
      const stream = await openai.responses.create({
        model: 'sim-chat',
        instructions: SYSTEM,
        input: 'responses, streamed',
        max_output_tokens: 8,
        stream: true,
      });
      let usage: OpenAI.Responses.ResponseUsage | undefined;
      for await (const event of stream) {
        // Eight tokens may end it as incomplete (max_output_tokens): its usage is as whole.
        if (event.type === 'response.completed' || event.type === 'response.incomplete') usage = event.response.usage;
      }
      return usage;
    });
    const streamedCached = expectBilledAtCachedRate(streamed);
    expect(streamed.result).toMatchObject({
      input_tokens: streamed.engine.prompt_tokens,
      input_tokens_details: { cached_tokens: streamedCached },
    });
  });

  it('Messages: cache_read_input_tokens, and input_tokens without them (Anthropic convention), JSON and stream', async () => {
    const first: Anthropic.MessageParam[] = [{ role: 'user', content: 'messages turn one' }];
    const one = await billed(() =>
      anthropic.messages.create({ model: 'sim-chat', system: SYSTEM, messages: first, max_tokens: 8 }),
    );
    expectBilledAtCachedRate(one);
    const reply = one.result.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    const second: Anthropic.MessageParam[] = [
      ...first,
      { role: 'assistant', content: reply || '.' },
      { role: 'user', content: 'messages turn two' },
    ];
    const two = await billed(() =>
      anthropic.messages.create({ model: 'sim-chat', system: SYSTEM, messages: second, max_tokens: 8 }),
    );
    const cached = expectBilledAtCachedRate(two);
    expect(cached).toBeGreaterThan(1000);
    expect(two.result.usage).toMatchObject({
      input_tokens: two.engine.prompt_tokens - cached,
      cache_read_input_tokens: cached,
      output_tokens: two.engine.completion_tokens,
    });
    const streamed = await billed(() =>
      anthropic.messages.stream({ model: 'sim-chat', system: SYSTEM, messages: second, max_tokens: 8 }).finalMessage(),
    );
    const streamedCached = expectBilledAtCachedRate(streamed);
    expect(streamedCached).toBeGreaterThan(1000);
    expect(streamed.result.usage).toMatchObject({
      input_tokens: streamed.engine.prompt_tokens - streamedCached,
      cache_read_input_tokens: streamedCached,
      output_tokens: streamed.engine.completion_tokens,
    });
  });

  it('reconciles: wallet verify finds no difference with cached charges, and the ledger export shows their parts', async () => {
    const admin = (route: string) =>
      fetch(`${gateway.url}/admin/v1/orgs/${orgId}/wallet/${route}`, {
        headers: { authorization: 'Bearer test-operator-token-0123456789' },
      }).then((res) => res.json() as Promise<Record<string, unknown>>);
    const records = await recordsOf();
    expect(await admin('verify')).toMatchObject({ ok: true, difference_count: 0, usage_records: records.length });
    const from = new Date(Date.now() - 3_600_000).toISOString().slice(0, 19) + 'Z';
    const to = new Date(Date.now() + 3_600_000).toISOString().slice(0, 19) + 'Z';
    const exported = (await admin(`ledger?from=${from}&to=${to}`)) as {
      usage: Array<{ request_id: string; cached_tokens: number; cost_nanos: string }>;
    };
    expect(exported.usage.map((u) => [u.request_id, u.cached_tokens, u.cost_nanos]).sort()).toEqual(
      records.map((r) => [r.id, r.cachedTokens, r.cost.toString()]).sort(),
    );
    expect(records.filter((r) => r.cachedTokens > 0).length).toBeGreaterThanOrEqual(5);
  });
});
