import Anthropic from '@anthropic-ai/sdk';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
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

/**
 * llama.cpp's own server behind the real gateway, registered as an operator
 * would (a `static` engine, docs/production.md): two chat replicas and an
 * embedding server on a tiny random-weight model, each behind a proxy that
 * records what the engine answered. Every usage record must equal what the
 * engine reported, read there, not at the gateway; nothing of the engine
 * (its build string, `timings`, headers) may reach the client.
 */

const missing = llamaServerMissing();
skippedWithout(missing);

type Proxy = Awaited<ReturnType<typeof recordingProxy>>;

describe.skipIf(missing !== null)("llama.cpp's server behind the gateway", () => {
  const servers: LlamaServer[] = [];
  const proxies: Proxy[] = [];
  let dir: string;
  let gateway: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;
  let orgId: string;
  let secret: string;

  beforeAll(async () => {
    servers.push(
      ...(await Promise.all([
        startLlamaServer('llama-chat-0', ['--parallel', '2']),
        startLlamaServer('llama-chat-1', ['--parallel', '2']),
        startLlamaServer('llama-embed', ['--embeddings', '--pooling', 'mean']),
      ])),
    );
    proxies.push(...(await Promise.all(servers.map((server) => recordingProxy(server.url)))));
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-llama-'));
    const file = path.join(dir, 'engines.json');
    // The chat engine says nothing of its kind (found from /props); the embedding one says it.
    const engines = [
      { kind: 'static', model: 'sim-chat', urls: [proxies[0]!.url, proxies[1]!.url] },
      { kind: 'static', model: 'sim-embed', engine: 'llamacpp', urls: [proxies[2]!.url] },
      { kind: 'simulator', model: 'sim-reasoner' },
    ];
    await writeFile(file, JSON.stringify({ engines }));
    gateway = await startTestGateway('pglite', {
      TOLLGATE_ENGINES_FILE: file,
      TOLLGATE_ROUTING_SCRAPE_MS: '100',
      TOLLGATE_ENGINE_POLL_MS: '200',
    });
    ({ orgId, secret } = await gateway.tenant({ credit: '50.00' }));
    openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: gateway.url, apiKey: secret, maxRetries: 0 });
    await until(
      'both chat replicas ready, scraped and known as llama.cpp',
      () => {
        const chat = gateway.services.fleet.status().find((engine) => engine.model === 'sim-chat');
        return chat?.replicas.length === 2 && chat.replicas.every((r) => r.state === 'ready' && r.load);
      },
      { timeout: 20_000, detail: () => gateway.services.fleet.status() },
    );
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
    for (const proxy of proxies) proxy.close();
    await Promise.all(servers.map((server) => server.child.stop('SIGTERM')));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const allExchanges = () => proxies.flatMap((proxy) => proxy.exchanges);
  /**
   * Runs `call`, and returns the one exchange it caused at an engine and the one usage record it
   * left.
   */
  async function billed(call: () => Promise<unknown>): Promise<{ exchange: Exchange; record: Usage }> {
    const before = new Set(allExchanges());
    const recordsBefore = (await recordsOf()).length;
    await call();
    await gateway.charged(10_000);
    const records = await recordsOf();
    const fresh = allExchanges().filter((e) => !before.has(e) && e.path.startsWith('/v1/'));
    expect(fresh).toHaveLength(1);
    expect(records).toHaveLength(recordsBefore + 1);
    return { exchange: fresh[0]!, record: records.at(-1)! };
  }
  type Usage = { promptTokens: number; completionTokens: number; cachedTokens: number; status: number };
  const recordsOf = async (): Promise<Usage[]> =>
    (await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, orgId))).sort(
      (a, b) => a.createdAt.getTime() - b.createdAt.getTime(),
    );
  const expectBilledAsReported = ({ exchange, record }: { exchange: Exchange; record: Usage }) => {
    const usage = reportedUsage(exchange);
    expect(usage).not.toBeNull();
    expect({ prompt: record.promptTokens, completion: record.completionTokens }).toEqual({
      prompt: usage!.prompt_tokens,
      // Embeddings report no completion tokens.
      completion: usage!.completion_tokens ?? 0,
    });
    // llama.cpp's count of the prompt its slot already held: billed at the cached-input price.
    expect(record.cachedTokens).toBe(usage!.prompt_tokens_details?.cached_tokens ?? 0);
  };
  const chatMessages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'You are a terse assistant.' },
    { role: 'user', content: 'Name three colours of the sky at dusk.' },
  ];

  it('chat JSON: billed as the engine reported, and nothing of the engine in the answer', async () => {
    let raw!: Response;
    const result = await billed(async () => {
      raw = await fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-chat', messages: chatMessages, max_tokens: 8 }),
      });
      expect(raw.status).toBe(200);
    });
    expectBilledAsReported(result);
    // The engine did send them: they are dropped, not absent.
    expect(result.exchange.response).toMatch(/"system_fingerprint":"b\d+|"timings"/);
    const text = await raw.text();
    expect(text).not.toMatch(/system_fingerprint|timings|llama/i);
    expect([...raw.headers.keys()].filter((name) => /server|llama|x-slot/i.test(name))).toEqual([]);
  });

  it('chat stream, without and with include_usage: billed as the engine reported, engine fields dropped', async () => {
    for (const includeUsage of [false, true]) {
      let chunks: OpenAI.ChatCompletionChunk[] = [];
      const result = await billed(async () => {
        const stream = await openai.chat.completions.create({
          model: 'sim-chat',
          messages: chatMessages,
          max_tokens: 8,
          stream: true,
          ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
        });
        chunks = [];
        for await (const chunk of stream) chunks.push(chunk);
      });
      expectBilledAsReported(result);
      expect(chunks.some((chunk) => chunk.usage)).toBe(includeUsage);
      expect(JSON.stringify(chunks)).not.toMatch(/system_fingerprint|timings/);
    }
  });

  it('tools: accepted by the engine and billed as it reported; json_schema: its refusal a readable 400', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    expectBilledAsReported(
      await billed(() =>
        openai.chat.completions.create({ model: 'sim-chat', messages: chatMessages, tools, max_tokens: 8 }),
      ),
    );
    // This build refuses json_schema on the tiny model (scripts/llama-tiny-model.py says why): a
    // 400 with the engine's words, readable (was 'Failed to initialize samplers:
    // st[redacted]xception'), and billed nothing.
    const recordsBefore = (await recordsOf()).length;
    const refusal = await openai.chat.completions
      .create({
        model: 'sim-chat',
        messages: chatMessages,
        max_tokens: 12,
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'colours', schema: { type: 'object', properties: { c: { type: 'string' } } } },
        },
      })
      .catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refusal as Error).message).toContain('Failed to initialize samplers: std::exception');
    await gateway.charged(10_000);
    expect((await recordsOf()).filter((r) => r.completionTokens > 0 || r.promptTokens > 0)).toHaveLength(recordsBefore);
  });

  it('embeddings, completions, Responses and Messages: each billed as the engine reported', async () => {
    expectBilledAsReported(
      await billed(() => openai.embeddings.create({ model: 'sim-embed', input: ['the sky at dusk', 'orange'] })),
    );
    expectBilledAsReported(
      await billed(() => openai.completions.create({ model: 'sim-chat', prompt: 'The sky at dusk is', max_tokens: 8 })),
    );
    expectBilledAsReported(
      await billed(() =>
        openai.responses.create({ model: 'sim-chat', input: 'Name a colour.', max_output_tokens: 16 }),
      ),
    );
    expectBilledAsReported(
      await billed(() =>
        anthropic.messages.create({
          model: 'sim-chat',
          max_tokens: 8,
          messages: [{ role: 'user', content: 'Name a colour.' }],
        }),
      ),
    );
  });

  it("Messages with an agent's tools twice: the second turn reuses their JSON, the engine is sent the same, each billed as it reported", async () => {
    const tools = Array.from({ length: 4 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool ${i} reads a file.`,
      input_schema: { type: 'object' as const, properties: { path: { type: 'string' } }, required: ['path'] },
    }));
    const turn = (text: string) =>
      billed(() =>
        anthropic.messages.create({
          model: 'sim-chat',
          max_tokens: 8,
          tools,
          messages: [{ role: 'user', content: text }],
        }),
      );
    const first = await turn('Read a.txt.');
    const second = await turn('Read b.txt.');
    for (const each of [first, second]) expectBilledAsReported(each);
    const toolsSent = (exchange: Exchange) => JSON.stringify(JSON.parse(exchange.request).tools);
    expect(toolsSent(second.exchange)).toBe(toolsSent(first.exchange));
    expect(JSON.parse(second.exchange.request).tools).toHaveLength(4);
  });

  it('conversations whose earlier turns the gateway reuses: the engine is sent every earlier turn as written, each turn billed as it reported', async () => {
    const sentMessages = (exchange: Exchange) => JSON.parse(exchange.request).messages as unknown[];
    /**
     * The later exchange's messages begin with all of the earlier one's, as the engine received
     * them.
     */
    const continues = (later: Exchange, earlier: Exchange) => {
      expect(sentMessages(later).length).toBeGreaterThan(sentMessages(earlier).length);
      expect(sentMessages(later).slice(0, sentMessages(earlier).length)).toEqual(sentMessages(earlier));
    };
    // Responses: a stored turn, the turn continuing it from the store, then that history sent whole
    // (`store: false`).
    let stored: OpenAI.Responses.Response | undefined;
    const first = await billed(async () => {
      stored = await openai.responses.create({ model: 'sim-chat', input: 'Name a colour.', max_output_tokens: 8 });
    });
    const second = await billed(() =>
      openai.responses.create({
        model: 'sim-chat',
        previous_response_id: stored!.id,
        input: 'Another.',
        max_output_tokens: 8,
      }),
    );
    const history = sentMessages(second.exchange).map((message) => message as { role: string; content: string });
    const third = await billed(() =>
      openai.responses.create({
        model: 'sim-chat',
        store: false,
        input: [
          ...history.map((turn) => ({ role: turn.role as 'user' | 'assistant', content: turn.content })),
          { role: 'user' as const, content: 'And one more.' },
        ],
        max_output_tokens: 8,
      }),
    );
    continues(second.exchange, first.exchange);
    continues(third.exchange, second.exchange);
    // Messages: a conversation growing by a turn.
    const opening: Anthropic.MessageParam[] = [{ role: 'user', content: 'Name a colour.' }];
    const fourth = await billed(() =>
      anthropic.messages.create({ model: 'sim-chat', max_tokens: 8, messages: opening }),
    );
    const fifth = await billed(() =>
      anthropic.messages.create({
        model: 'sim-chat',
        max_tokens: 8,
        messages: [...opening, { role: 'assistant', content: 'Blue.' }, { role: 'user', content: 'Another.' }],
      }),
    );
    continues(fifth.exchange, fourth.exchange);
    for (const each of [first, second, third, fourth, fifth]) expectBilledAsReported(each);
  });

  it('refuses n: 2 with a 400 naming the limit (the engine would bill one choice of two)', async () => {
    const error = await openai.chat.completions
      .create({ model: 'sim-chat', messages: chatMessages, max_tokens: 4, n: 2 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as Error).message).toMatch(/n must be 1/);
  });

  it('answers an image sent to the text model with a 4xx, not a retryable 5xx', async () => {
    const error = await openai.chat.completions
      .create({
        model: 'sim-chat',
        max_tokens: 4,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${ONE_PIXEL_PNG}` } },
            ],
          },
        ],
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    const status = (error as InstanceType<typeof OpenAI.APIError>).status!;
    expect(status).toBeGreaterThanOrEqual(400);
    expect(status).toBeLessThan(500);
    expect((error as Error).message).not.toMatch(/\[redacted\]/);
  });

  it('bills a stream the client leaves after 20 chunks within 10 % of the prompt the engine counts', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a careful assistant who answers at length. '.repeat(6) },
      { role: 'user', content: 'Tell me a long story about the sky.' },
    ];
    // The engine's count of this prompt, template and system prompt included.
    const counted = await billed(() => openai.chat.completions.create({ model: 'sim-chat', messages, max_tokens: 1 }));
    const enginePrompt = reportedUsage(counted.exchange)!.prompt_tokens;
    const before = (await recordsOf()).length;
    const controller = new AbortController();
    const stream = await openai.chat.completions.create(
      { model: 'sim-chat', messages, max_tokens: 400, stream: true, ignore_eos: true } as never,
      { signal: controller.signal },
    );
    let chunks = 0;
    try {
      for await (const _ of stream as unknown as AsyncIterable<unknown>) if (++chunks === 20) controller.abort();
    } catch {
      // the client left
    }
    await gateway.charged(10_000);
    const left = (await recordsOf()).slice(before);
    expect(left).toHaveLength(1);
    expect(left[0]!.status).toBe(499);
    expect(Math.abs(left[0]!.promptTokens - enginePrompt) / enginePrompt).toBeLessThanOrEqual(0.1);
  });

  it('splits a burst of 10 long requests sharing one system prompt across the two replicas (neither over 7)', async () => {
    const system = 'You are the support agent of a large shop; follow the policy below. '.repeat(12);
    const chats = (proxy: Proxy) => proxy.exchanges.filter((e) => e.path === '/v1/chat/completions').length;
    const before = proxies.slice(0, 2).map(chats);
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        openai.chat.completions.create({
          model: 'sim-chat',
          messages: [
            { role: 'system', content: system },
            { role: 'user', content: `Ticket ${i}: where is my order?` },
          ],
          max_tokens: 48,
          ignore_eos: true,
        } as OpenAI.ChatCompletionCreateParamsNonStreaming),
      ),
    );
    const split = proxies.slice(0, 2).map((proxy, i) => chats(proxy) - before[i]!);
    expect(split[0]! + split[1]!).toBe(10);
    expect(Math.max(...split)).toBeLessThanOrEqual(7);
  });
});

const ONE_PIXEL_PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
