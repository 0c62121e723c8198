import Anthropic from '@anthropic-ai/sdk';
import { ChatAnthropic } from '@langchain/anthropic';
import { eq } from 'drizzle-orm';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseAmount } from '../../../src/gateway/billing/money.js';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, postgresAndRedisOrSkip, redisUrl, uniqueRedisPrefix } from '../../helpers/services.js';

/**
 * LangChain's ChatAnthropic (@langchain/anthropic, on Anthropic's own SDK) pointed at the gateway's
 * root with a key, as a LangChain user would: invoke, stream, and a tool call through bindTools.
 */
describe("LangChain's ChatAnthropic on /v1/messages, on the simulator", () => {
  let gateway: TestGateway;
  let model: ChatAnthropic;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
    const { secret } = await gateway.tenant();
    model = new ChatAnthropic({
      model: 'sim-chat',
      anthropicApiUrl: gateway.url,
      apiKey: secret,
      maxTokens: 64,
      maxRetries: 0,
    });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('invokes, with the usage the gateway billed', async () => {
    const message = await model.invoke([
      ['system', 'Be brief.'],
      ['human', 'Say hello.'],
    ]);
    expect(typeof message.content === 'string' ? message.content : message.text).not.toBe('');
    expect(message.usage_metadata?.output_tokens).toBeGreaterThan(0);
    await gateway.charged();
    const usage = await fetchUsage(gateway, model);
    expect(usage[0]).toMatchObject({
      endpoint: 'messages',
      streamed: false,
      prompt_tokens: message.usage_metadata?.input_tokens,
      completion_tokens: message.usage_metadata?.output_tokens,
    });
  });

  it('streams the answer in several text chunks, billed as a stream', async () => {
    const chunks: string[] = [];
    for await (const chunk of await model.stream('Stream, please.'))
      if (typeof chunk.content === 'string') chunks.push(chunk.content);
    expect(chunks.filter((c) => c !== '').length).toBeGreaterThan(1);
    await gateway.charged();
    expect((await fetchUsage(gateway, model))[0]).toMatchObject({ endpoint: 'messages', streamed: true });
  });

  it('calls a tool bound with bindTools, with arguments that fit its schema', async () => {
    const readFile = { name: 'read_file', description: 'Reads a file', schema: z.object({ path: z.string() }) };
    const withTools = model.bindTools([readFile], { tool_choice: 'read_file' });
    const message = await withTools.invoke('Read README.md');
    expect(message.tool_calls).toHaveLength(1);
    expect(message.tool_calls![0]).toMatchObject({
      name: 'read_file',
      args: { path: expect.any(String) },
      id: expect.any(String),
    });
  });
});

/** The key's usage records, newest first, through the usage API. */
async function fetchUsage(gateway: TestGateway, model: ChatAnthropic): Promise<Array<Record<string, unknown>>> {
  const response = await fetch(`${gateway.baseURL}/usage/requests`, {
    headers: { authorization: `Bearer ${model.apiKey}` },
  });
  return ((await response.json()) as { data: Array<Record<string, unknown>> }).data;
}

const ready = await postgresAndRedisOrSkip('Messages on PostgreSQL with limits in Redis');

/**
 * Production's parts: PostgreSQL, and the limits gate in Redis. The engine's usage is fixed by the
 * simulator's script, so each usage record, and the wallet, can be checked to the nano-unit; the
 * key's limit of two requests a minute refuses the third as Anthropic's SDK reads it.
 */
describe.skipIf(!ready)('Messages on PostgreSQL with limits in Redis, key as authToken', () => {
  // Under the request's bounds (its body's bytes, max_tokens), so the charge is the engine's usage,
  // not clamped.
  const engine = { prompt: 41, completion: 33 };
  const price = { input: 150n, output: 600n };
  const cost = BigInt(engine.prompt) * price.input + BigInt(engine.completion) * price.output;
  const prefix = uniqueRedisPrefix();
  let dir: string;
  let gateway: TestGateway;
  let tenant: { orgId: string; secret: string };
  let client: Anthropic;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tollgate-messages-'));
    await writeFile(
      path.join(dir, 'turns.jsonl'),
      JSON.stringify({
        content: 'Hi there, from the script.',
        prompt_tokens: engine.prompt,
        completion_tokens: engine.completion,
      }),
    );
    const scripted = { kind: 'simulator', model: 'sim-chat', task: 'chat', max_model_len: 8192, script: 'turns.jsonl' };
    await writeFile(path.join(dir, 'engines.json'), JSON.stringify({ engines: [scripted] }));
    gateway = await startTestGateway('postgres', {
      REDIS_URL: redisUrl,
      TOLLGATE_REDIS_PREFIX: prefix,
      TOLLGATE_ENGINES_FILE: path.join(dir, 'engines.json'),
    });
    tenant = await gateway.tenant({ credit: '1.00', key: { requestsPerMinute: 2 } });
    client = new Anthropic({ baseURL: gateway.url, authToken: tenant.secret, apiKey: null, maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
    await deleteRedisPrefix(prefix);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function recordOf(requestId: string | null) {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId!));
    return record!;
  }
  const ask = { model: 'sim-chat', max_tokens: 64, messages: [{ role: 'user' as const, content: 'Hello.' }] };

  it("bills a JSON answer and a stream at the engine's usage, then refuses the third request with 429 and Retry-After", async () => {
    const { data: json, response: jsonResponse } = await client.messages.create(ask).withResponse();
    expect(json.usage).toMatchObject({ input_tokens: engine.prompt, output_tokens: engine.completion });
    const billed = {
      endpoint: 'messages',
      promptTokens: engine.prompt,
      completionTokens: engine.completion,
      usageSource: 'upstream',
      cost,
    };
    expect(await recordOf(jsonResponse.headers.get('x-request-id'))).toMatchObject({ ...billed, streamed: false });

    const { data: stream, response: streamResponse } = await client.messages
      .create({ ...ask, stream: true })
      .withResponse();
    let streamed = { input: -1, output: -1 };
    for await (const event of stream) {
      if (event.type === 'message_start') streamed.input = event.message.usage.input_tokens;
      if (event.type === 'message_delta') streamed = { input: streamed.input, output: event.usage.output_tokens };
    }
    expect(streamed).toEqual({ input: engine.prompt, output: engine.completion });
    expect(await recordOf(streamResponse.headers.get('x-request-id'))).toMatchObject({ ...billed, streamed: true });

    const refused = await client.messages.create(ask).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(Anthropic.RateLimitError);
    const { error, headers } = refused as InstanceType<typeof Anthropic.RateLimitError>;
    expect(error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error', code: 'rate_limit_exceeded' } });
    expect(Number(headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);

    await gateway.charged();
    expect(await gateway.services.wallets.balance(tenant.orgId)).toBe(parseAmount('1.00') - 2n * cost);
  });
});
