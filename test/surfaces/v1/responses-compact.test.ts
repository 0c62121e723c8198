import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

/**
 * Issue 71, item 4: `POST /v1/responses/compact`, as Codex CLI calls it to compact a long session
 * (codex-rs `CompactClient`: its `CompactionInput` serialized by serde, the answer read as
 * `{ output: [ResponseItem] }` and sent as the next turn's history). Before, it was a 404.
 */
type Json = Record<string, any>;

/** A Codex session's history as `CompactionInput` serializes it: field order and all. */
function codexBody(turns: number): string {
  const input: string[] = [
    '{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>sandbox: workspace-write</permissions instructions>"}]}',
    '{"type":"message","role":"user","content":[{"type":"input_text","text":"Fix the failing test in src/parse.ts."}]}',
  ];
  for (let turn = 0; turn < turns; turn++) {
    input.push(
      `{"type":"reasoning","summary":[{"type":"summary_text","text":"Look at the file ${turn}."}],"content":null,"encrypted_content":"gAAAAABo${turn}"}`,
      `{"type":"function_call","name":"shell","arguments":"{\\"command\\":[\\"cat\\",\\"src/parse${turn}.ts\\"]}","call_id":"call_${turn}"}`,
      `{"type":"function_call_output","call_id":"call_${turn}","output":"${'export const parse = (s: string) => s.split(\\",\\");\\n'.repeat(20)}"}`,
      `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"The parser in file ${turn} splits on commas."}]}`,
    );
  }
  return (
    '{"model":"sim-chat","input":[' +
    input.join(',') +
    '],"instructions":"You are Codex, a coding agent.","tools":[],"parallel_tool_calls":false,' +
    '"reasoning":{"effort":"medium","summary":"auto"},"prompt_cache_key":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}'
  );
}

describe('POST /v1/responses/compact', () => {
  let gateway: TestGateway;
  let secret: string;

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
    ({ secret } = await gateway.tenant());
  });
  afterAll(async () => {
    await gateway?.close();
  });

  const post = (path: string, body: Json | string, key = secret) =>
    fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        originator: 'codex_cli_rs',
        session_id: '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      },
      body: typeof body === 'string' ? body : JSON.stringify({ model: 'sim-chat', ...body }),
    });
  const recordOf = async (answer: Response) => {
    await gateway.charged();
    const id = answer.headers.get('x-request-id')!;
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, id));
    return record!;
  };

  it("answers Codex's request with the user's messages and a compaction, billed as the engine counted", async () => {
    const answer = await post('/responses/compact', codexBody(12));
    const compacted = (await answer.json()) as Json;
    expect(answer.status, JSON.stringify(compacted)).toBe(200);
    expect(compacted).toMatchObject({ object: 'response.compaction', id: expect.stringMatching(/^resp_/) });
    expect(compacted.created_at).toEqual(expect.any(Number));
    const types = (compacted.output as Json[]).map((item) => `${item.type}:${item.role ?? ''}`);
    expect(types).toEqual(['message:user', 'compaction:']);
    expect(compacted.output[0].content).toEqual([
      { type: 'input_text', text: 'Fix the failing test in src/parse.ts.' },
    ]);
    expect(compacted.output[1]).toMatchObject({
      id: expect.stringMatching(/^cmp_/),
      encrypted_content: expect.any(String),
    });
    const record = await recordOf(answer);
    expect(record.endpoint).toBe('responses.compact');
    expect(record.promptTokens).toBe(compacted.usage.input_tokens);
    expect(record.completionTokens).toBe(compacted.usage.output_tokens);
    expect(compacted.usage.total_tokens).toBe(record.promptTokens + record.completionTokens);
    expect(BigInt(record.cost)).toBeGreaterThan(0n);

    // Codex's next turn: the compacted history, then the user's new message. The engine is sent the
    // summary (as many tokens as the count says), far fewer than the history it replaced.
    const next = {
      instructions: 'You are Codex, a coding agent.',
      input: [
        ...compacted.output,
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Go on.' }] },
      ],
      max_output_tokens: 4,
    };
    const counted = (await (await post('/responses/input_tokens', next)).json()) as Json;
    const turn = await post('/responses', next);
    const response = (await turn.json()) as Json;
    expect(turn.status, JSON.stringify(response)).toBe(200);
    const turnRecord = await recordOf(turn);
    expect(turnRecord.promptTokens).toBe(counted.input_tokens);
    expect(turnRecord.promptTokens).toBeLessThan(record.promptTokens / 2);
    // Without its summary the same turn prompts fewer tokens: the compaction was read, not dropped.
    const bare = { ...next, input: [compacted.output[0], next.input.at(-1)] };
    const bareCount = (await (await post('/responses/input_tokens', bare)).json()) as Json;
    expect(counted.input_tokens).toBeGreaterThan(bareCount.input_tokens);
  });

  it('names a compaction sent back without its id cmp_, as a stored response and as a conversation list it', async () => {
    // Codex sends its compacted history back as items without ids (its `ResponseItem::Compaction`
    // holds only `encrypted_content`); both stores give such an item an id of its type's prefix.
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    const compacted = await client.responses.compact({ model: 'sim-chat', input: 'Plan a trip to Lisbon.' });
    const { id: _id, ...withoutId } = compacted.output.find((item) => item.type === 'compaction') as Json;
    const input = [withoutId, { type: 'message', role: 'user', content: 'Go on.' }] as OpenAI.Responses.ResponseInput;
    const turn = await client.responses.create({ model: 'sim-chat', input, max_output_tokens: 4 });
    const listed = await client.responses.inputItems.list(turn.id);
    const conversation = await client.conversations.create({ items: input });
    const items = await client.conversations.items.list(conversation.id);
    const idsOf = (page: { data: Array<{ type: string; id?: string }> }) =>
      Object.fromEntries(page.data.map((item) => [item.type, item.id?.replace(/_.*/, '_')]));
    expect(idsOf(listed)).toEqual({ compaction: 'cmp_', message: 'msg_' });
    expect(idsOf(items)).toEqual({ compaction: 'cmp_', message: 'msg_' });
  });

  it('compacts a stored chain by previous_response_id, and not another organization’s', async () => {
    const first = await post('/responses', { input: 'Remember the word marmalade.', max_output_tokens: 8 });
    const stored = (await first.json()) as Json;
    expect(first.status).toBe(200);
    const own = await post('/responses/compact', { previous_response_id: stored.id });
    const compacted = (await own.json()) as Json;
    expect(own.status, JSON.stringify(compacted)).toBe(200);
    expect(compacted.output[0].content[0].text).toBe('Remember the word marmalade.');

    const other = await gateway.tenant();
    const foreign = await post('/responses/compact', { previous_response_id: stored.id }, other.secret);
    const error = (await foreign.json()) as Json;
    expect(foreign.status).toBe(404);
    expect(error.error).toMatchObject({ type: 'invalid_request_error' });
    expect(JSON.stringify(error)).not.toContain('marmalade');
    await gateway.charged();
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, other.orgId));
    expect(records).toEqual([]);
  });

  it("answers the openai SDK's responses.compact", async () => {
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
    const compacted = await client.responses.compact({ model: 'sim-chat', input: 'Plan a trip to Lisbon.' });
    expect(compacted.object).toBe('response.compaction');
    expect(compacted.output.map((item) => item.type)).toEqual(['message', 'compaction']);
  });

  it('refuses, in OpenAI’s shape, what it cannot do: a stream, nothing to compact, another’s compaction', async () => {
    const refusals = [
      await post('/responses/compact', { input: 'Hi.', stream: true }),
      await post('/responses/compact', { input: 'Hi.', background: true }),
      await post('/responses/compact', { input: 'Hi.', conversation: 'conv_1' }),
      await post('/responses/compact', {}),
      await post('/responses/compact', { input: 42 }),
      await post('/responses/compact', '{"model":"sim-chat","input":['),
      // OpenAI's own compaction is encrypted with its key: refused, never silently dropped.
      await post('/responses', { input: [{ type: 'compaction', encrypted_content: 'gAAAAABpM0Yj-abc=' }] }),
      await post('/responses/compact', { input: [{ type: 'compaction', encrypted_content: 'gAAAAABpM0Yj-abc=' }] }),
    ];
    for (const refusal of refusals) {
      const body = (await refusal.json()) as Json;
      expect(refusal.status, JSON.stringify(body)).toBe(400);
      expect(body.error).toMatchObject({ type: 'invalid_request_error', message: expect.any(String) });
    }
    const unknown = await post('/responses/compact', { model: 'no-such-model', input: 'Hi.' });
    expect(((await unknown.json()) as Json).error).toMatchObject({ code: 'model_not_found' });
  });
});
