import fc from 'fast-check';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { allItems, conversationTurns } from '../../helpers/conversation-turns.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { openApiErrors } from '../../helpers/openapi.js';

const stores = await availableStores();

describe.each(stores)('/v1/conversations (%s)', (kind) => {
  let gateway: TestGateway;
  let client: OpenAI;
  let secret: string;
  let orgId: string;

  beforeAll(async () => {
    // Compiling OpenAI's spec holds this process for seconds: before the gateway's connections
    // could idle out.
    openApiErrors('ConversationResource', {});
    gateway = await startTestGateway(kind);
    ({ secret, orgId } = await gateway.tenant({
      credit: '100.00',
      key: { requestsPerMinute: 1_000_000, maxConcurrency: 1_000 },
    }));
    client = new OpenAI({ baseURL: gateway.baseURL, apiKey: secret, maxRetries: 0 });
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
  });

  it('creates, reads, updates and deletes a conversation and its items through the openai SDK, in OpenAI shapes', async () => {
    const created = await client.conversations.create({
      metadata: { topic: 'demo' },
      items: [
        { type: 'message', role: 'user', content: 'Hello!' },
        { type: 'message', role: 'assistant', content: 'Hi there.' },
      ],
    });
    expect(openApiErrors('ConversationResource', created)).toEqual([]);
    expect(created).toMatchObject({ object: 'conversation', metadata: { topic: 'demo' } });
    expect(await client.conversations.retrieve(created.id)).toEqual(created);
    const updated = await client.conversations.update(created.id, { metadata: { topic: 'other' } });
    expect(updated).toMatchObject({ id: created.id, metadata: { topic: 'other' } });

    const list = await client.conversations.items.list(created.id, { order: 'asc' });
    const listed = await fetch(`${gateway.baseURL}/conversations/${created.id}/items?order=asc`, {
      headers: { authorization: `Bearer ${secret}` },
    }).then((response) => response.json());
    expect(openApiErrors('ConversationItemList', listed)).toEqual([]);
    expect(list.data).toMatchObject([
      { type: 'message', role: 'user', status: 'completed', content: [{ type: 'input_text', text: 'Hello!' }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hi there.', annotations: [] }] },
    ]);
    const added = await client.conversations.items.create(created.id, {
      items: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'And you?' }] }],
    });
    expect(openApiErrors('ConversationItemList', added)).toEqual([]);
    const itemId = added.data[0]!.id!;
    expect(await client.conversations.items.retrieve(itemId, { conversation_id: created.id })).toEqual(added.data[0]);
    const newestFirst = await client.conversations.items.list(created.id, { limit: 1 });
    expect(newestFirst.data.map((item) => item.id)).toEqual([itemId]);
    expect(newestFirst.has_more).toBe(true);

    const after = await client.conversations.items.delete(itemId, { conversation_id: created.id });
    expect(after).toMatchObject({ id: created.id, object: 'conversation' });
    await expect(client.conversations.items.retrieve(itemId, { conversation_id: created.id })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    const deleted = await client.conversations.delete(created.id);
    expect(openApiErrors('DeletedConversationResource', deleted)).toEqual([]);
    expect(deleted).toEqual({ id: created.id, object: 'conversation.deleted', deleted: true });
    await expect(client.conversations.retrieve(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(client.conversations.items.list(created.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('serves an Agents SDK conversation session: add items, read them in order, pop the last one', async () => {
    // The calls OpenAIConversationsSession makes: create(), items.create, items.list (asc), pop
    // (desc, limit 1, delete).
    const { id } = await client.conversations.create();
    for (let n = 0; n < 12; n++)
      await client.conversations.items.create(id, { items: [{ role: 'user', content: `line ${n}` }] });
    expect((await allItems(client, id)).map((item) => (item.content as Array<{ text: string }>)[0]!.text)).toEqual(
      Array.from({ length: 12 }, (_, n) => `line ${n}`),
    );
    const [last] = (await client.conversations.items.list(id, { limit: 1, order: 'desc' })).data;
    await client.conversations.items.delete(last!.id!, { conversation_id: id });
    expect(await allItems(client, id)).toHaveLength(11);
  });

  it('20 turns with `conversation`: each prompt is the conversation written out; a deleted item is gone next turn', async () => {
    const { id } = await client.conversations.create({ items: [{ role: 'developer', content: 'Be brief.' }] });
    const counts = await conversationTurns([client], id, 20);
    // What the usage records billed: the engine's own count, the same numbers.
    await gateway.charged();
    const billed = await gateway.services.db
      .select({ prompt: usageRecords.promptTokens, source: usageRecords.usageSource })
      .from(usageRecords)
      .where(eq(usageRecords.orgId, orgId));
    for (const count of counts) expect(billed).toContainEqual({ prompt: count, source: 'upstream' });
    // The prompt grows with every turn: each one carried the whole conversation.
    for (let turn = 1; turn < counts.length; turn++) expect(counts[turn]).toBeGreaterThan(counts[turn - 1]!);
    const before = await allItems(client, id);
    await client.conversations.items.delete(before[1]!.id as string, { conversation_id: id });
    // The next turn's prompt equals the conversation written out without it: had the engine been
    // sent it, more.
    const next = await conversationTurns([client], id, 1);
    expect((await allItems(client, id)).map((item) => item.id)).not.toContain(before[1]!.id);
    expect(next[0]!).toBeLessThan(counts.at(-1)! + (counts.at(-1)! - counts.at(-2)!));
  }, 120_000);

  it('appends a streamed turn as a JSON one, and says its conversation in the response', async () => {
    const { id } = await client.conversations.create();
    const streamed = await client.responses
      .stream({ model: 'sim-chat', conversation: { id }, input: 'Stream this.', max_output_tokens: 8 })
      .finalResponse();
    expect(streamed).toMatchObject({ conversation: { id } });
    expect(streamed.status).not.toBe('failed');
    const items = await allItems(client, id);
    expect(items[0]).toMatchObject({ type: 'message', role: 'user', content: [{ text: 'Stream this.' }] });
    expect(items.slice(1).map((item) => item.id)).toEqual(streamed.output.map((item) => item.id));
  });

  it('refuses `conversation` with `previous_response_id`, as OpenAI does, and an unknown conversation is a 404', async () => {
    const { id } = await client.conversations.create();
    const first = await client.responses.create({ model: 'sim-chat', input: 'Hi', max_output_tokens: 4 });
    const both = await client.responses
      .create({ model: 'sim-chat', input: 'x', conversation: id, previous_response_id: first.id })
      .catch((error: unknown) => error);
    expect(both).toBeInstanceOf(OpenAI.BadRequestError);
    expect(String((both as Error).message)).toContain('Mutually exclusive parameters');
    const unknown = await client.responses
      .create({ model: 'sim-chat', input: 'x', conversation: { id: `conv_${'0'.repeat(48)}` } })
      .catch((error: unknown) => error);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
  });

  it("is 404 for another organization's conversation and item ids, on every route, and leaves them whole", async () => {
    const mine = await client.conversations.create({
      metadata: { owner: 'a' },
      items: [{ role: 'user', content: 'secret' }],
    });
    const [item] = (await client.conversations.items.list(mine.id)).data;
    const hostile = await gateway.tenant();
    const other = new OpenAI({ baseURL: gateway.baseURL, apiKey: hostile.secret, maxRetries: 0 });
    const attempts: Array<() => Promise<unknown>> = [
      () => other.conversations.retrieve(mine.id),
      () => other.conversations.update(mine.id, { metadata: { owner: 'b' } }),
      () => other.conversations.items.list(mine.id),
      () => other.conversations.items.create(mine.id, { items: [{ role: 'user', content: 'injected' }] }),
      () => other.conversations.items.retrieve(item!.id!, { conversation_id: mine.id }),
      () => other.conversations.items.delete(item!.id!, { conversation_id: mine.id }),
      () => other.responses.create({ model: 'sim-chat', input: 'What did they say?', conversation: mine.id }),
      () => other.conversations.delete(mine.id),
    ];
    for (const attempt of attempts) {
      const error = await attempt().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(OpenAI.NotFoundError);
      expect(JSON.stringify((error as InstanceType<typeof OpenAI.APIError>).error)).not.toContain('secret');
    }
    expect(await client.conversations.retrieve(mine.id)).toMatchObject({ metadata: { owner: 'a' } });
    expect((await allItems(client, mine.id)).map((one) => one.id)).toEqual([item!.id]);
  });

  it('never answers 5xx to fuzzed bodies and paths on the new routes', async () => {
    const { id } = await client.conversations.create({ items: [{ role: 'user', content: 'x' }] });
    const json = fc.jsonValue({ maxDepth: 4 });
    const body = fc.oneof(
      json.map((value) => JSON.stringify(value)),
      fc.record({ items: fc.array(json, { maxLength: 25 }), metadata: json }).map((value) => JSON.stringify(value)),
      fc.record({ model: fc.constant('sim-chat'), input: json, conversation: json }).map((v) => JSON.stringify(v)),
      fc.string(),
    );
    const segment = fc.oneof(fc.constant(id), fc.string({ maxLength: 80 }).map(encodeURIComponent));
    const route = fc.oneof(
      fc.constant({ method: 'POST', path: '/v1/conversations' }),
      segment.map((s) => ({ method: 'POST', path: `/v1/conversations/${s}` })),
      segment.map((s) => ({ method: 'POST', path: `/v1/conversations/${s}/items` })),
      fc.tuple(segment, segment).map(([s, t]) => ({ method: 'GET', path: `/v1/conversations/${s}/items/${t}` })),
      fc.tuple(segment, fc.string({ maxLength: 5 })).map(([s, l]) => ({
        method: 'GET',
        path: `/v1/conversations/${s}/items?limit=${encodeURIComponent(l)}&after=${s}`,
      })),
      fc.constant({ method: 'POST', path: '/v1/responses' }),
    );
    await fc.assert(
      fc.asyncProperty(route, body, async ({ method, path }, sent) => {
        const response = await fetch(`${gateway.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
          body: method === 'GET' ? undefined : sent,
        });
        const text = await response.text();
        expect(response.status, `${method} ${path} ${sent.slice(0, 200)} -> ${text.slice(0, 200)}`).toBeLessThan(500);
      }),
      { seed: 20_261_128, numRuns: 150 },
    );
  }, 120_000);
});
