import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { limitsEnv, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { deleteRedisPrefix, redisAvailable, uniqueRedisPrefix } from '../../helpers/services.js';

/**
 * Issue 71, item 4: `POST /v1/responses/input_tokens` (OpenAI's "Get input token counts") counts a
 * request's input as the gateway bills it: the translated chat body, its stored history and
 * references included, tokenized by the engine; free, but within the key's limits and with its body
 * bounded, as `count_tokens` is. Before, it was a 404.
 */
const kinds = (await redisAvailable()) ? (['memory', 'redis'] as const) : (['memory'] as const);
const MAX_BODY = 16 * 1024;

type Json = Record<string, any>;

const readFile = {
  type: 'function',
  name: 'read_file',
  description: 'Reads a file of the project',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

describe.each(kinds)('POST /v1/responses/input_tokens (%s limits)', (kind) => {
  let gateway: TestGateway;
  let secret: string;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    gateway = await startTestGateway('pglite', {
      ...limitsEnv(kind, prefix),
      TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES: String(MAX_BODY),
    });
    ({ secret } = await gateway.tenant());
  });
  afterAll(async () => {
    await gateway?.close();
    if (kind === 'redis') await deleteRedisPrefix(prefix);
  });

  const post = (key: string, path: string, body: Json | string) =>
    fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify({ model: 'sim-chat', ...body }),
    });
  const count = async (body: Json, key = secret): Promise<number> => {
    const answer = await post(key, '/responses/input_tokens', body);
    const json = (await answer.json()) as Json;
    expect(answer.status, JSON.stringify(json)).toBe(200);
    expect(json).toEqual({ object: 'response.input_tokens', input_tokens: expect.any(Number) });
    return json.input_tokens as number;
  };
  /** The same request made, and the prompt tokens its usage record bills. */
  const billed = async (body: Json): Promise<{ prompt: number; response: Json }> => {
    const answer = await post(secret, '/responses', { max_output_tokens: 4, ...body });
    const response = (await answer.json()) as Json;
    expect(answer.status, JSON.stringify(response)).toBe(200);
    await gateway.charged();
    const [record] = await gateway.services.db
      .select()
      .from(usageRecords)
      .where(eq(usageRecords.id, answer.headers.get('x-request-id')!));
    return { prompt: record!.promptTokens, response };
  };

  it('equals the input tokens the same request is billed: instructions, tools, history and references', async () => {
    const first = { instructions: 'Be brief.', input: 'Which file holds the settings?', tools: [readFile] };
    const counted = await count(first);
    const turn = await billed(first);
    expect(counted).toBe(turn.prompt);
    expect(counted).toBe(turn.response.usage.input_tokens);
    // Continued by previous_response_id: the stored turn is counted too.
    const next = { previous_response_id: turn.response.id, input: 'And the tests?', tools: [readFile] };
    const continued = await count(next);
    expect(continued).toBeGreaterThan(counted);
    expect(continued).toBe((await billed(next)).prompt);
    // The earlier answer (a message or a tool call) by reference, as the AI SDK sends it.
    const [answer] = turn.response.output as Json[];
    const referenced = {
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'Which file holds the settings?' }] },
        { type: 'item_reference', id: answer!.id },
      ],
      tools: [readFile],
    };
    expect(await count(referenced)).toBe((await billed(referenced)).prompt);
  });

  it("answers the openai SDK's responses.inputTokens.count, and bills nothing", async () => {
    const tenant = await gateway.tenant();
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    const answer = await client.responses.inputTokens.count({ model: 'sim-chat', input: 'Tell me a joke.' });
    expect(answer.object).toBe('response.input_tokens');
    expect(answer.input_tokens).toBeGreaterThan(0);
    await gateway.charged();
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, tenant.orgId));
    expect(records).toEqual([]);
  });

  it("refuses as the turn would: an unknown reference, another organization's response, a bad body", async () => {
    const mine = await billed({ input: 'Hello.' });
    const other = await gateway.tenant();
    const foreign = await post(other.secret, '/responses/input_tokens', {
      model: 'sim-chat',
      previous_response_id: mine.response.id,
      input: 'Hi.',
    });
    expect(foreign.status).toBe(404);
    const message = mine.response.output.find((item: Json) => item.type === 'message');
    const reference = { input: [{ type: 'item_reference', id: message.id }] };
    const foreignReference = await post(other.secret, '/responses/input_tokens', reference);
    const unknownReference = await post(secret, '/responses/input_tokens', {
      input: [{ type: 'item_reference', id: `msg_${'0'.repeat(64)}` }],
    });
    expect(foreignReference.status).toBe(400);
    expect(unknownReference.status).toBe(400);
    expect(((await foreignReference.json()) as Json).error.message).toBe(`Item with id '${message.id}' not found.`);
    expect((await post(secret, '/responses/input_tokens', { input: 3 })).status).toBe(400);
    const unknownModel = await post(secret, '/responses/input_tokens', { model: 'nope', input: 'x' });
    expect(((await unknownModel.json()) as Json).error.code).toBe('model_not_found');
  });

  it('counts against the key: past its requests per minute a count is a 429', async () => {
    const { secret: limited } = await gateway.tenant({ key: { requestsPerMinute: 3, maxConcurrency: 2 } });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => post(limited, '/responses/input_tokens', { input: 'Count me.' })),
    );
    const statuses = answers.map((answer) => answer.status);
    await Promise.all(answers.map((answer) => answer.arrayBuffer()));
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
    expect(statuses.filter((status) => status === 200).length).toBeLessThanOrEqual(3);
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(3);
  });

  it('a body over TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES is a 413 naming it, and its slot given back', async () => {
    const { secret: single } = await gateway.tenant({ key: { requestsPerMinute: 100, maxConcurrency: 1 } });
    const long = JSON.stringify({ model: 'sim-chat', input: 'x'.repeat(MAX_BODY + 1) });
    const refused = await post(single, '/responses/input_tokens', long);
    expect(refused.status).toBe(413);
    const body = (await refused.json()) as Json;
    expect(body.error.message).toContain('TOLLGATE_COUNT_TOKENS_MAX_BODY_BYTES');
    expect(await count({ input: 'Small again.' }, single)).toBeGreaterThan(0);
  });
});
