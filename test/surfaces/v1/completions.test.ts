import type { Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { engineStub } from '../../helpers/engine-stub.js';
import { until } from '../../helpers/wait.js';

const stores = await oneStore();

interface CompletionsBody {
  prompt: string | string[];
  max_tokens?: number;
  n?: number;
  stream?: boolean;
  echo?: boolean;
  suffix?: string;
  hang?: boolean;
}

/**
 * An engine that answers `/v1/completions` as vLLM does: `n` choices for each
 * prompt, `max_tokens` tokens each (a word a token), usage summed over them,
 * the prompt's words counted as its tokens; streamed a token a chunk with
 * running usage when asked. `hang: true` streams three tokens and then waits
 * for the client to go.
 */
function startCompletionsEngine() {
  const seen: CompletionsBody[] = [];
  const server: Server = engineStub((text, res) => {
    const body = JSON.parse(text) as CompletionsBody;
    seen.push(body);
    const prompts = Array.isArray(body.prompt) ? body.prompt : [body.prompt];
    const n = body.n ?? 1;
    const each = body.max_tokens ?? 16;
    const promptTokens = prompts.reduce((sum, p) => sum + p.split(' ').length, 0);
    const usage = (completion: number) => ({
      prompt_tokens: promptTokens,
      completion_tokens: completion,
      total_tokens: promptTokens + completion,
    });
    const head = { id: 'cmpl-1', object: 'text_completion', created: 1, model: 'engine' };
    const choices = prompts.flatMap((prompt, p) =>
      Array.from({ length: n }, (_, i) => ({
        index: p * n + i,
        text: `${body.echo ? prompt : ''}${' tok'.repeat(each)}`,
        logprobs: null,
        finish_reason: 'length',
      })),
    );
    if (!body.stream) {
      res.setHeader('content-type', 'application/json');
      return res.end(JSON.stringify({ ...head, choices, usage: usage(choices.length * each) }));
    }
    res.setHeader('content-type', 'text/event-stream');
    const chunk = (fields: object) => res.write(`data: ${JSON.stringify({ ...head, ...fields })}\n\n`);
    let sent = 0;
    for (const choice of choices) {
      for (let t = 0; t < (body.hang ? 3 : each); t++)
        chunk({
          choices: [{ index: choice.index, text: ' tok', logprobs: null, finish_reason: null }],
          usage: usage(++sent),
        });
      if (body.hang) return; // the client leaves; the socket closes with it
      chunk({
        choices: [{ index: choice.index, text: '', logprobs: null, finish_reason: 'length' }],
        usage: usage(sent),
      });
    }
    chunk({ choices: [], usage: usage(sent) });
    res.end('data: [DONE]\n\n');
  });
  return { server, seen };
}

describe.each(stores)('POST /v1/completions (%s)', (store) => {
  let engine: ReturnType<typeof startCompletionsEngine>;
  let dir: string;
  let gateway: TestGateway;
  let client: OpenAI;
  const price = { input: 150n, output: 600n };

  beforeAll(async () => {
    engine = startCompletionsEngine();
    await new Promise<void>((resolve) => engine.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(engine.server.address() as AddressInfo).port}`;
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-completions-'));
    const enginesFile = path.join(dir, 'engines.json');
    await writeFile(
      enginesFile,
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url, served_model_name: 'engine' }] }),
    );
    gateway = await startTestGateway(store, { TOLLGATE_ENGINES_FILE: enginesFile });
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: (await gateway.tenant()).secret, maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
    engine?.server.closeAllConnections();
    await new Promise((resolve) => engine?.server.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function recordOf(requestId: string | null) {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId!));
    return record!;
  }

  it('answers a prompt as JSON, the suffix passed on, billed at what the engine reported', async () => {
    const { data, response } = await client.completions
      .create({ model: 'sim-chat', prompt: 'def add(a, b):', suffix: '\n', max_tokens: 7 })
      .withResponse();
    expect(data.model).toBe('sim-chat');
    expect(data.choices[0]!.text).toBe(' tok'.repeat(7));
    expect(engine.seen.at(-1)).toMatchObject({ model: 'engine', suffix: '\n' });
    const record = await recordOf(response.headers.get('x-request-id'));
    expect(record).toMatchObject({
      endpoint: 'completions',
      promptTokens: 3,
      completionTokens: 7,
      usageSource: 'upstream',
      cost: 3n * price.input + 7n * price.output,
    });
  });

  it('bills every choice of every prompt: two prompts, n 3, max_tokens 10 is sixty tokens', async () => {
    const { data, response } = await client.completions
      .create({ model: 'sim-chat', prompt: ['one two', 'three'], n: 3, max_tokens: 10, echo: true })
      .withResponse();
    expect(data.choices).toHaveLength(6);
    expect(data.usage!.completion_tokens).toBe(60);
    const record = await recordOf(response.headers.get('x-request-id'));
    expect(record).toMatchObject({
      promptTokens: 3,
      completionTokens: 60,
      usageSource: 'upstream',
      cost: 3n * price.input + 60n * price.output,
    });
  });

  it('streams, billed at the final usage, shown to the client only when it asked', async () => {
    const { data, response } = await client.completions
      .create({
        model: 'sim-chat',
        prompt: 'hello world',
        max_tokens: 5,
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of data) {
      text += chunk.choices[0]?.text ?? '';
      expect(chunk.model).toBe('sim-chat');
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(' tok'.repeat(5));
    expect(usage).toMatchObject({ prompt_tokens: 2, completion_tokens: 5 });
    expect(await recordOf(response.headers.get('x-request-id'))).toMatchObject({
      promptTokens: 2,
      completionTokens: 5,
      streamed: true,
      usageSource: 'upstream',
    });
  });

  it('bills a stream the client abandons for what was generated', async () => {
    const controller = new AbortController();
    const { data, response } = await client.completions
      .create(
        {
          model: 'sim-chat',
          prompt: 'slow one',
          max_tokens: 50,
          stream: true,
          hang: true,
        } as OpenAI.CompletionCreateParamsStreaming,
        { signal: controller.signal },
      )
      .withResponse();
    let chunks = 0;
    try {
      for await (const chunk of data) if (chunk.choices[0]?.text && ++chunks === 3) controller.abort();
    } catch {
      // The client's own abort: the SDK ends the iteration, with or without an error.
    }
    expect(chunks).toBe(3);
    const record = await until('the abandoned stream is charged', async () => {
      const [row] = await gateway.services.db
        .select()
        .from(usageRecords)
        .where(eq(usageRecords.id, response.headers.get('x-request-id')!));
      return row;
    });
    expect(record).toMatchObject({
      status: 499,
      promptTokens: 2,
      completionTokens: 3,
      usageSource: 'upstream',
      cost: 2n * price.input + 3n * price.output,
    });
  });

  it('refuses a prompt of no allowed shape, and n past TOLLGATE_MAX_CHOICES, before the engine', async () => {
    const sent = engine.seen.length;
    for (const prompt of [[], [1, 'a'], { text: 'x' }, 42]) {
      const refused = await client.completions
        .create({ model: 'sim-chat', prompt: prompt as unknown as string })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as Error).message).toMatch(/prompt must be/);
    }
    const tooMany = await client.completions
      .create({ model: 'sim-chat', prompt: 'x', n: 129 })
      .catch((error: unknown) => error);
    expect((tooMany as Error).message).toMatch(/TOLLGATE_MAX_CHOICES/);
    expect(engine.seen.length).toBe(sent);
  });

  it('answers 401, 402, 429 and model_not_found as the OpenAI client reads them', async () => {
    const bad = new OpenAI({ baseURL: gateway.baseURL, apiKey: 'sk-gw-nope', maxRetries: 0 });
    await expect(bad.completions.create({ model: 'sim-chat', prompt: 'x' })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const broke = new OpenAI({
      baseURL: gateway.baseURL,
      apiKey: (await gateway.tenant({ credit: '0' })).secret,
      maxRetries: 0,
    });
    await expect(broke.completions.create({ model: 'sim-chat', prompt: 'x' })).rejects.toMatchObject({
      status: 402,
      code: 'insufficient_funds',
    });
    const limited = new OpenAI({
      baseURL: gateway.baseURL,
      apiKey: (await gateway.tenant({ key: { requestsPerMinute: 1 } })).secret,
      maxRetries: 0,
    });
    await limited.completions.create({ model: 'sim-chat', prompt: 'x', max_tokens: 1 });
    const refused = await limited.completions
      .create({ model: 'sim-chat', prompt: 'x', max_tokens: 1 })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toMatch(/^\d+$/);
    await expect(client.completions.create({ model: 'no-such-model', prompt: 'x' })).rejects.toMatchObject({
      status: 400,
      code: 'model_not_found',
    });
    await expect(client.completions.create({ model: 'sim-embed', prompt: 'x' })).rejects.toMatchObject({
      code: 'model_not_found',
    });
  });
});

describe.each(stores)('POST /v1/completions on the simulator (%s)', (store) => {
  let gateway: TestGateway;
  let client: OpenAI;
  beforeAll(async () => {
    gateway = await startTestGateway(store);
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: (await gateway.tenant()).secret, maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function recordOf(requestId: string | null) {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId!));
    return record!;
  }

  it('bills a JSON answer of two prompts and n 2 at the usage the engine reported', async () => {
    const { data, response } = await client.completions
      .create({
        model: 'sim-chat',
        prompt: ['def fib(n):', 'class Tree:'],
        n: 2,
        max_tokens: 8,
        echo: true,
        logprobs: 2,
      })
      .withResponse();
    expect(data.choices).toHaveLength(4);
    const { prompt_tokens: promptTokens, completion_tokens: completionTokens } = data.usage!;
    expect(completionTokens).toBeGreaterThan(8);
    expect(await recordOf(response.headers.get('x-request-id'))).toMatchObject({
      endpoint: 'completions',
      promptTokens,
      completionTokens,
      cost: BigInt(promptTokens) * 150n + BigInt(completionTokens) * 600n,
    });
  });

  it('bills a stream at the usage the engine reported', async () => {
    const { data, response } = await client.completions
      .create({
        model: 'sim-chat',
        prompt: 'fn main() {',
        max_tokens: 6,
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of data) usage = chunk.usage ?? usage;
    expect(await recordOf(response.headers.get('x-request-id'))).toMatchObject({
      streamed: true,
      promptTokens: usage!.prompt_tokens,
      completionTokens: usage!.completion_tokens,
    });
  });

  it("relays the engine's own 400 for suffix, as vLLM answers it", async () => {
    await expect(client.completions.create({ model: 'sim-chat', prompt: '<fim>', suffix: '}' })).rejects.toMatchObject({
      status: 400,
      code: 'invalid_request',
    });
  });
});
