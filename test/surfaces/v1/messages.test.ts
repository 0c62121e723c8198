import Anthropic from '@anthropic-ai/sdk';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

const stores = await oneStore();
const price = { input: 150n, output: 600n };

describe.each(stores)('POST /v1/messages with the Anthropic SDK, on the simulator (%s)', (store) => {
  let gateway: TestGateway;
  let client: Anthropic;
  let secret: string;

  beforeAll(async () => {
    gateway = await startTestGateway(store);
    secret = (await gateway.tenant()).secret;
    // ANTHROPIC_BASE_URL is the gateway's root: the SDK adds /v1/messages.
    client = new Anthropic({ baseURL: gateway.url, authToken: secret, apiKey: null, maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function recordOf(requestId: string | null | undefined) {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId!));
    return record!;
  }

  it('answers as an Anthropic message, billed at the usage it reports', async () => {
    const { data, response } = await client.messages
      .create({
        model: 'sim-chat',
        max_tokens: 64,
        system: 'Be brief.',
        messages: [{ role: 'user', content: 'Say hello.' }],
        stop_sequences: ['\n\n'],
      })
      .withResponse();
    expect(data).toMatchObject({ type: 'message', role: 'assistant', model: 'sim-chat', stop_reason: 'end_turn' });
    expect(data.content[0]).toMatchObject({ type: 'text' });
    expect(data.usage.output_tokens).toBeGreaterThan(0);
    const record = await recordOf(response.headers.get('x-request-id'));
    const { input_tokens: input, output_tokens: output } = data.usage;
    expect(record).toMatchObject({
      endpoint: 'messages',
      promptTokens: input,
      completionTokens: output,
      usageSource: 'upstream',
      cost: BigInt(input) * price.input + BigInt(output) * price.output,
    });
  });

  it("streams Anthropic's event sequence, ending with the usage it is billed for", async () => {
    const { data: stream, response } = await client.messages
      .create({
        model: 'sim-chat',
        max_tokens: 20,
        messages: [{ role: 'user', content: 'Stream, please.' }],
        stream: true,
      })
      .withResponse();
    const types: string[] = [];
    let text = '';
    let output = 0;
    let input = 0;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'message_start') input = event.message.usage.input_tokens;
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
      if (event.type === 'message_delta') output = event.usage.output_tokens;
    }
    expect(types[0]).toBe('message_start');
    expect(types.slice(1, 3)).toEqual(['content_block_start', 'content_block_delta']);
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(text.length).toBeGreaterThan(0);
    const record = await recordOf(response.headers.get('x-request-id'));
    expect(record).toMatchObject({
      endpoint: 'messages',
      streamed: true,
      promptTokens: input,
      completionTokens: output,
      cost: BigInt(input) * price.input + BigInt(output) * price.output,
    });
  });

  it('takes a turn with tools, tool_use and tool_result blocks, thinking, and the key as x-api-key', async () => {
    const byApiKey = new Anthropic({ baseURL: gateway.url, apiKey: secret, maxRetries: 0 });
    const tools = Array.from({ length: 40 }, (_, i) => ({
      name: `tool_${i}`,
      description: 'x'.repeat(1500),
      input_schema: { type: 'object' as const, properties: { path: { type: 'string' } }, required: ['path'] },
    }));
    // Claude Code's shape: streamed, max_tokens 32,000 (past the model's context), about 63 KB of
    // tools, thinking on.
    const message = await byApiKey.messages
      .stream({
        model: 'sim-chat',
        max_tokens: 32000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        tools: [...tools, { type: 'web_search_20250305', name: 'web_search' } as unknown as (typeof tools)[number]],
        tool_choice: { type: 'auto' },
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Read the file.' }] },
          {
            role: 'assistant',
            content: [
              { type: 'thinking', thinking: 'I should read it.', signature: 'sig' },
              { type: 'tool_use', id: 'toolu_1', name: 'tool_0', input: { path: 'a.txt' } },
            ],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'hello from a.txt' }] },
        ],
      })
      .finalMessage();
    expect(message.type).toBe('message');
    expect(JSON.stringify(tools).length).toBeGreaterThan(60_000);
  });

  it.each([false, true])(
    "returns the engine's tool call as a tool_use block, named and with valid input (stream: %s)",
    async (stream) => {
      const request = {
        model: 'sim-chat',
        max_tokens: 200,
        tools: [
          {
            name: 'read_file',
            description: 'Reads a file',
            input_schema: { type: 'object' as const, properties: { path: { type: 'string' } }, required: ['path'] },
          },
        ],
        tool_choice: { type: 'tool' as const, name: 'read_file' },
        messages: [{ role: 'user' as const, content: 'Read README.md' }],
      };
      const message = stream
        ? await client.messages.stream(request).finalMessage()
        : await client.messages.create(request);
      expect(message.stop_reason).toBe('tool_use');
      const call = message.content.find((block) => block.type === 'tool_use');
      expect(call).toMatchObject({ type: 'tool_use', name: 'read_file', input: { path: expect.any(String) } });
    },
  );

  it('counts tokens', async () => {
    const counted = await client.messages.countTokens({
      model: 'sim-chat',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'How many tokens is this?' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(5);
    await expect(
      client.messages.countTokens({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    ).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });

  it('answers 401, 402, 429 and model_not_found as Anthropic clients read them', async () => {
    const bad = new Anthropic({ baseURL: gateway.url, authToken: 'sk-gw-nope', apiKey: null, maxRetries: 0 });
    const ask = (c: Anthropic, model = 'sim-chat') =>
      c.messages
        .create({ model, max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
        .catch((error: unknown) => error);
    const unauthorized = await ask(bad);
    expect(unauthorized).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((unauthorized as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', code: 'unauthorized' },
    });
    const broke = new Anthropic({
      baseURL: gateway.url,
      authToken: (await gateway.tenant({ credit: '0' })).secret,
      apiKey: null,
      maxRetries: 0,
    });
    expect(await ask(broke)).toMatchObject({
      status: 402,
      error: { type: 'error', error: { type: 'billing_error', code: 'insufficient_funds' } },
    });
    const limited = new Anthropic({
      baseURL: gateway.url,
      authToken: (await gateway.tenant({ key: { requestsPerMinute: 1 } })).secret,
      apiKey: null,
      maxRetries: 0,
    });
    await limited.messages.create({ model: 'sim-chat', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] });
    const limitedError = await ask(limited);
    expect(limitedError).toBeInstanceOf(Anthropic.RateLimitError);
    expect((limitedError as InstanceType<typeof Anthropic.APIError>).headers?.get('retry-after')).toMatch(/^\d+$/);
    const unknown = await ask(client, 'no-such-model');
    expect(unknown).toBeInstanceOf(Anthropic.BadRequestError);
    expect((unknown as InstanceType<typeof Anthropic.APIError>).error).toMatchObject({
      type: 'error',
      error: { type: 'invalid_request_error', code: 'model_not_found' },
    });
    const invalid = await client.messages
      .create({ model: 'sim-chat', messages: [{ role: 'user', content: 'x' }] } as never)
      .catch((error: unknown) => error);
    expect((invalid as Error).message).toMatch(/max_tokens must be a positive integer/);
  });
});

describe('a Messages stream the client abandons', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    // 50 ms between tokens: the client leaves after three, long before the answer's sixteen.
    gateway = await startTestGateway('pglite', { TOLLGATE_SIM_ITL_MS: '50' });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('is billed for what was generated, from the engine running count', async () => {
    const client = new Anthropic({
      baseURL: gateway.url,
      authToken: (await gateway.tenant()).secret,
      apiKey: null,
      maxRetries: 0,
    });
    const controller = new AbortController();
    const { data: stream, response } = await client.messages
      .create(
        { model: 'sim-chat', max_tokens: 100, messages: [{ role: 'user', content: 'Take your time.' }], stream: true },
        { signal: controller.signal },
      )
      .withResponse();
    let deltas = 0;
    try {
      for await (const event of stream) if (event.type === 'content_block_delta' && ++deltas === 3) controller.abort();
    } catch {
      // The client's own abort.
    }
    const record = await until('the abandoned stream is charged', async () => {
      const [row] = await gateway.services.db
        .select()
        .from(usageRecords)
        .where(eq(usageRecords.id, response.headers.get('x-request-id')!));
      return row;
    });
    expect(record).toMatchObject({ endpoint: 'messages', status: 499, usageSource: 'upstream' });
    expect(record.completionTokens).toBeGreaterThanOrEqual(3);
    expect(record.completionTokens).toBeLessThan(16);
    expect(record.cost).toBe(
      BigInt(record.promptTokens) * price.input + BigInt(record.completionTokens) * price.output,
    );
  });
});
