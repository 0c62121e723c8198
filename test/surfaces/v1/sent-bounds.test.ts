import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

// Hostile: the bounds, the hold and the clamp are what the engine is sent, not the client's body
// alone.
// - A Responses turn continuing a 40,000-word stored conversation sends the engine every earlier
//   turn: it is billed the engine's prompt tokens (on the old code, 137 or so: the bounds were the
//   new turn's body, usage "clamped").
// - A ceiling the client asked for (max_tokens: 1) on a prompt the gateway estimates near the
//   context is kept: the engine generates at most 1 token (on the old code the gateway removed it
//   and the engine generated 16, billed 1).

const stores = await oneStore();
const LONG = { id: 'long-chat', context: 65_536 };
const SHORT = { id: 'short-chat', context: 4_096 };
const SHORT_WORDS = ['oak', 'elm', 'ash', 'fir', 'yew', 'bay', 'ivy', 'rye'];
const LONG_WORDS = [
  'harborside',
  'lanterns',
  'meadowlark',
  'copperhead',
  'thistledown',
  'orchards',
  'granite',
  'willows',
];

/** `count` words, one token each for the simulator; the gateway estimates four characters a token. */
function words(count: number, list = SHORT_WORDS): string {
  return Array.from({ length: count }, (_, i) => list[i % list.length]).join(' ');
}

describe.each(stores)('bounds from what the engine is sent (%s)', (store) => {
  let tmp: string;
  let gateway: TestGateway;
  let client: OpenAI;
  let secret: string;

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tollgate-sent-bounds-'));
    const engines = [LONG, SHORT].map((m) => ({
      kind: 'simulator',
      model: m.id,
      task: 'chat',
      max_model_len: m.context,
    }));
    await writeFile(path.join(tmp, 'engines.json'), JSON.stringify({ engines }));
    gateway = await startTestGateway(store, { TOLLGATE_ENGINES_FILE: path.join(tmp, 'engines.json') });
    for (const m of [LONG, SHORT]) {
      await gateway.services.catalog.add({
        id: m.id,
        displayName: m.id,
        hfRepoId: `tollgate-test/${m.id}`,
        taskType: 'chat',
        contextLength: m.context,
        enabled: true,
      });
      await gateway.services.catalog.setPrice(m.id, 150n, 600n);
    }
    secret = (await gateway.tenant({ credit: '100.00' })).secret;
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  async function recordOf(requestId: string | null) {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId!));
    return record!;
  }

  it('bills a turn continuing a 40,000-word conversation at the prompt tokens the engine reports, JSON and stream', async () => {
    const first = await client.responses.create({ model: LONG.id, max_output_tokens: 8, input: words(40_000) });
    expect(first.usage!.input_tokens).toBeGreaterThan(40_000);

    const { data: second, response } = await client.responses
      .create({ model: LONG.id, max_output_tokens: 8, previous_response_id: first.id, input: 'Go on.' })
      .withResponse();
    expect(second.usage!.input_tokens).toBeGreaterThan(40_000);
    expect(await recordOf(response.headers.get('x-request-id'))).toMatchObject({
      promptTokens: second.usage!.input_tokens,
      usageSource: 'upstream',
    });

    const { data: stream, response: streamed } = await client.responses
      .create({ model: LONG.id, max_output_tokens: 8, previous_response_id: second.id, input: 'More.', stream: true })
      .withResponse();
    // Its last event: `response.incomplete` when the 8 tokens asked end it, else
    // `response.completed`.
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream)
      if (event.type === 'response.completed' || event.type === 'response.incomplete') completed = event.response;
    expect(completed!.usage!.input_tokens).toBeGreaterThan(second.usage!.input_tokens);
    expect(await recordOf(streamed.headers.get('x-request-id'))).toMatchObject({
      promptTokens: completed!.usage!.input_tokens,
      usageSource: 'upstream',
    });
  }, 120_000);

  // About 3,300 estimated tokens and 1,500 of the simulator's, twice: past the 4,096 context by the
  // estimate only.
  const nearContext = words(1_500, LONG_WORDS);
  const messages = (body: Record<string, unknown>) =>
    fetch(`${gateway.baseURL}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('keeps max_tokens: 1 on /v1/messages for a prompt estimated near the context: 1 token generated', async () => {
    const body = {
      model: SHORT.id,
      max_tokens: 1,
      messages: [{ role: 'user', content: `${nearContext} ${nearContext}` }],
    };
    const answer = await messages(body);
    expect(answer.status).toBe(200);
    const message = (await answer.json()) as { usage: { output_tokens: number } };
    expect(message.usage.output_tokens).toBe(1);
    expect(await recordOf(answer.headers.get('x-request-id'))).toMatchObject({
      completionTokens: 1,
      usageSource: 'upstream',
    });

    const stream = await messages({ ...body, stream: true });
    const text = await stream.text();
    expect(text).toContain('"output_tokens":1}');
    expect(await recordOf(stream.headers.get('x-request-id'))).toMatchObject({
      completionTokens: 1,
      usageSource: 'upstream',
    });
  });

  it('keeps max_output_tokens: 1 on /v1/responses for a prompt estimated near the context', async () => {
    const { data, response } = await client.responses
      .create({ model: SHORT.id, max_output_tokens: 1, input: `${nearContext} ${nearContext}` })
      .withResponse();
    expect(data.usage!.output_tokens).toBe(1);
    expect(await recordOf(response.headers.get('x-request-id'))).toMatchObject({
      completionTokens: 1,
      usageSource: 'upstream',
    });
  });
});
