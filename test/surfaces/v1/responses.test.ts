import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { until } from '../../helpers/wait.js';

const stores = await oneStore();
const price = { input: 150n, output: 600n };
const readFile = {
  type: 'function' as const,
  name: 'read_file',
  description: 'Reads a file',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' } },
    required: ['path'],
    additionalProperties: false,
  },
  strict: true,
};

describe.each(stores)('POST /v1/responses with the openai client, on the simulator (%s)', (store) => {
  let gateway: TestGateway;
  let client: OpenAI;

  beforeAll(async () => {
    gateway = await startTestGateway(store);
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: (await gateway.tenant()).secret, maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  async function recordOf(requestId: string | null | undefined) {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId!));
    return record!;
  }

  it('answers a Response with instructions, billed at the usage it reports', async () => {
    const { data, response } = await client.responses
      .create({ model: 'sim-chat', instructions: 'Be brief.', input: 'Say hello.' })
      .withResponse();
    expect(data).toMatchObject({
      object: 'response',
      status: 'completed',
      model: 'sim-chat',
      instructions: 'Be brief.',
      error: null,
    });
    expect(data.id).toMatch(/^resp_/);
    expect(data.output[0]).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text' }],
    });
    expect(data.output_text.length).toBeGreaterThan(0);
    const { input_tokens: input, output_tokens: output, total_tokens: total } = data.usage!;
    expect(total).toBe(input + output);
    const record = await recordOf(response.headers.get('x-request-id'));
    expect(record).toMatchObject({
      endpoint: 'responses',
      streamed: false,
      promptTokens: input,
      completionTokens: output,
      usageSource: 'upstream',
      cost: BigInt(input) * price.input + BigInt(output) * price.output,
    });
  });

  it('streams the Responses event sequence, ending with response.completed and the usage it is billed for', async () => {
    const { data: stream, response } = await client.responses
      .create({ model: 'sim-chat', input: [{ role: 'user', content: 'Stream, please.' }], stream: true })
      .withResponse();
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const types = events.map((event) => event.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
    const deltas = events.filter((event) => event.type === 'response.output_text.delta');
    expect(deltas[0]).toMatchObject({
      item_id: expect.stringMatching(/^msg_/),
      output_index: 0,
      content_index: 0,
      delta: expect.any(String),
    });
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.output[0]).toMatchObject({
      type: 'message',
      content: [{ type: 'output_text', text: deltas.map((d) => (d as { delta: string }).delta).join('') }],
    });
    const { input_tokens: input, output_tokens: output } = completed.response.usage!;
    const record = await recordOf(response.headers.get('x-request-id'));
    expect(record).toMatchObject({
      endpoint: 'responses',
      streamed: true,
      status: 200,
      promptTokens: input,
      completionTokens: output,
      cost: BigInt(input) * price.input + BigInt(output) * price.output,
    });
  });

  it('responses.stream() gives the final response, text deltas and a max_output_tokens cut as incomplete', async () => {
    const stream = client.responses.stream({ model: 'sim-chat', input: 'Tell me more.' });
    let text = '';
    stream.on('response.output_text.delta', (event) => (text += event.delta));
    const final = await stream.finalResponse();
    expect(final.output_text).toBe(text);
    const cut = await client.responses.create({ model: 'sim-chat', input: 'A long story.', max_output_tokens: 3 });
    expect(cut).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      usage: { output_tokens: 3 },
    });
  });

  it.each([false, true])(
    'takes function tools and their outputs as input items over two turns (stream: %s)',
    async (stream) => {
      const ask = async (
        body: Omit<OpenAI.Responses.ResponseCreateParamsNonStreaming, 'stream'>,
      ): Promise<OpenAI.Responses.Response> =>
        stream
          ? client.responses.stream({ ...body, stream: true }).finalResponse()
          : client.responses.create({ ...body, stream: false });
      const input: OpenAI.Responses.ResponseInputItem[] = [{ role: 'user', content: 'Read README.md' }];
      const first = await ask({
        model: 'sim-chat',
        input,
        tools: [readFile],
        tool_choice: { type: 'function', name: 'read_file' },
      });
      const call = first.output.find(
        (item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call',
      )!;
      expect(call).toMatchObject({
        type: 'function_call',
        name: 'read_file',
        id: expect.stringMatching(/^fc_/),
        call_id: expect.any(String),
        status: 'completed',
      });
      expect(JSON.parse(call.arguments)).toEqual({ path: expect.any(String) });
      const second = await ask({
        model: 'sim-chat',
        input: [...input, call, { type: 'function_call_output', call_id: call.call_id, output: '# Hello' }],
        tools: [readFile],
        tool_choice: 'none',
      });
      expect(second.status).toBe('completed');
      expect(second.output_text.length).toBeGreaterThan(0);
    },
  );

  it('text.format json_schema answers JSON of the schema', async () => {
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer' } },
      required: ['city', 'days'],
      additionalProperties: false,
    };
    const answer = await client.responses.create({
      model: 'sim-chat',
      input: 'Plan a trip',
      text: { format: { type: 'json_schema', name: 'trip', schema, strict: true } },
    });
    expect(JSON.parse(answer.output_text)).toEqual({ city: expect.any(String), days: expect.any(Number) });
    expect(answer.text).toMatchObject({ format: { type: 'json_schema', name: 'trip' } });
  });

  it.each([false, true])(
    "gives a reasoning model's reasoning as a reasoning item with summary text (stream: %s)",
    async (stream) => {
      const body = {
        model: 'sim-reasoner',
        input: 'Think first.',
        reasoning: { effort: 'low' as const, summary: 'auto' as const },
      };
      const answer = stream ? await client.responses.stream(body).finalResponse() : await client.responses.create(body);
      const reasoning = answer.output.find((item) => item.type === 'reasoning');
      expect(reasoning).toMatchObject({
        type: 'reasoning',
        id: expect.stringMatching(/^rs_/),
        summary: [{ type: 'summary_text', text: expect.any(String) }],
      });
      expect(answer.usage!.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
      // Reasoning items of an earlier turn are taken back as input (and dropped: chat has no place
      // for them).
      const next = await client.responses.create({
        model: 'sim-reasoner',
        input: [
          { role: 'user', content: 'Think first.' },
          ...(answer.output as OpenAI.Responses.ResponseInputItem[]),
          { role: 'user', content: 'Go on.' },
        ],
      });
      expect(next.status).toBe('completed');
    },
  );

  it("takes Codex's request: store false, developer messages, namespace and built-in tools, fields it does not use", async () => {
    const body = {
      model: 'sim-chat',
      instructions: 'You are a coding agent.',
      input: [
        {
          type: 'message',
          role: 'developer',
          content: [{ type: 'input_text', text: '<permissions>workspace-write</permissions>' }],
        },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'List the files.' }] },
      ],
      tools: [
        {
          type: 'namespace',
          name: 'mcp__files',
          description: 'File tools',
          tools: [
            {
              type: 'function',
              name: 'list',
              description: 'Lists files',
              parameters: { type: 'object', properties: { dir: { type: 'string' } }, required: ['dir'] },
            },
          ],
        },
        { type: 'web_search' },
        {
          type: 'custom',
          name: 'apply_patch',
          description: 'Applies a patch',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: /.+/' },
        },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      reasoning: { effort: 'medium', summary: 'auto' },
      store: false,
      stream: true,
      include: ['reasoning.encrypted_content'],
      prompt_cache_key: '0196-session',
      text: { verbosity: 'low' },
      service_tier: 'auto',
    };
    const final = await client.responses
      .stream(body as unknown as OpenAI.Responses.ResponseCreateParamsStreaming)
      .finalResponse();
    expect(final).toMatchObject({ status: 'completed', store: false });
    const call = final.output.find((item) => item.type === 'function_call' || item.type === 'custom_tool_call');
    expect(call).toBeDefined();
    if (call?.type === 'function_call') expect(call).toMatchObject({ namespace: 'mcp__files', name: 'list' });
    else expect(call).toMatchObject({ type: 'custom_tool_call', name: 'apply_patch', input: expect.any(String) });
  });

  it("is never answered from a key's response cache: each turn has an id of its own", async () => {
    const cached = new OpenAI({
      baseURL: gateway.baseURL,
      apiKey: (await gateway.tenant({ key: { responseCache: true } })).secret,
      maxRetries: 0,
    });
    const ask = () =>
      cached.responses.create({ model: 'sim-chat', input: 'Same question.', temperature: 0 }).withResponse();
    const [first, second] = [await ask(), await ask()];
    expect(first.data.id).not.toBe(second.data.id);
    expect(second.response.headers.get('x-tollgate-cache')).toBeNull();
    expect(await recordOf(second.response.headers.get('x-request-id'))).toMatchObject({
      endpoint: 'responses',
      cacheHit: false,
    });
  });

  it('answers 400 for bad input, and 401, 402, 429 and model_not_found as the SDK reads them', async () => {
    const ask = (c: OpenAI, model = 'sim-chat') =>
      c.responses.create({ model, input: 'x', max_output_tokens: 5 }).catch((error: unknown) => error);
    const invalid = await client.responses
      .create({ model: 'sim-chat', input: 42 } as never)
      .catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(OpenAI.BadRequestError);
    expect((invalid as Error).message).toMatch(/input must be a string or an array of input items/);
    expect(await ask(new OpenAI({ baseURL: gateway.baseURL, apiKey: 'sk-gw-nope', maxRetries: 0 }))).toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const broke = new OpenAI({
      baseURL: gateway.baseURL,
      apiKey: (await gateway.tenant({ credit: '0' })).secret,
      maxRetries: 0,
    });
    expect(await ask(broke)).toMatchObject({ status: 402, code: 'insufficient_funds' });
    const limited = new OpenAI({
      baseURL: gateway.baseURL,
      apiKey: (await gateway.tenant({ key: { requestsPerMinute: 1 } })).secret,
      maxRetries: 0,
    });
    await limited.responses.create({ model: 'sim-chat', input: 'x', max_output_tokens: 5 });
    const limitedError = await ask(limited);
    expect(limitedError).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limitedError as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toMatch(/^\d+$/);
    const unknown = await ask(client, 'no-such-model');
    expect(unknown).toBeInstanceOf(OpenAI.BadRequestError);
    expect(unknown).toMatchObject({ code: 'model_not_found' });
  });
});

describe('a Responses stream the client abandons', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    // 50 ms between tokens: the client leaves after three, long before the answer's sixteen.
    gateway = await startTestGateway('pglite', { TOLLGATE_SIM_ITL_MS: '50' });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('is billed for what was generated, from the engine running count', async () => {
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: (await gateway.tenant()).secret, maxRetries: 0 });
    const controller = new AbortController();
    const { data: stream, response } = await client.responses
      .create(
        { model: 'sim-chat', input: 'Take your time.', max_output_tokens: 100, stream: true },
        { signal: controller.signal },
      )
      .withResponse();
    let deltas = 0;
    try {
      for await (const event of stream)
        if (event.type === 'response.output_text.delta' && ++deltas === 3) controller.abort();
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
    expect(record).toMatchObject({ endpoint: 'responses', status: 499, usageSource: 'upstream' });
    expect(record.completionTokens).toBeGreaterThanOrEqual(3);
    expect(record.completionTokens).toBeLessThan(16);
    expect(record.cost).toBe(
      BigInt(record.promptTokens) * price.input + BigInt(record.completionTokens) * price.output,
    );
  });
});
