import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';

/**
 * Issue 71, item 1: `{"type":"item_reference","id":"msg_…"}` in a Responses `input` is the stored
 * item it names. Before, the gateway dropped references: the AI SDK's Responses provider, which
 * sends the earlier assistant message as a reference to the earlier response's output message,
 * prompted 30 tokens where the conversation written out prompted 49 (the model never saw its own
 * answer), and an unknown reference was a 200.
 */
const stores = await oneStore();
const MAX_REFERENCES = 3;

type Json = Record<string, any>;

const user = (text: string) => ({ role: 'user', content: [{ type: 'input_text', text }] });
const reference = (id: string) => ({ type: 'item_reference', id });

describe.each(stores)('item_reference in /v1/responses (%s)', (store) => {
  let gateway: TestGateway;
  let secret: string;
  let other: string;

  beforeAll(async () => {
    gateway = await startTestGateway(store, { TOLLGATE_RESPONSES_MAX_REFERENCES: String(MAX_REFERENCES) });
    secret = (await gateway.tenant()).secret;
    other = (await gateway.tenant()).secret;
  });
  afterAll(async () => {
    await gateway?.close();
  });

  const post = (key: string, body: Json, path = '/responses') =>
    fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', max_output_tokens: 8, ...body }),
    });
  const create = async (key: string, body: Json): Promise<Json> => {
    const answer = await post(key, body);
    const json = (await answer.json()) as Json;
    expect(answer.status, JSON.stringify(json)).toBe(200);
    return { ...json, requestId: answer.headers.get('x-request-id') };
  };
  const billedPrompt = async (requestId: string) => {
    await gateway.charged();
    const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId));
    return record!.promptTokens;
  };
  const messageOf = (response: Json) => response.output.find((item: Json) => item.type === 'message');

  it("a reference to the organization's earlier output message prompts as the conversation written out", async () => {
    const first = await create(secret, { input: [user('What is two plus two?')] });
    const answer = messageOf(first);
    expect(answer.id).toMatch(/^msg_[0-9a-f]{64}$/);
    // As the AI SDK sends the second turn: the first message, the answer by reference, the next
    // question.
    const referenced = await create(secret, {
      input: [user('What is two plus two?'), reference(answer.id), user('And three plus three?')],
    });
    // The same conversation written out: the answer as an assistant message, as a client that keeps
    // it sends it.
    const writtenOut = await create(secret, {
      input: [
        user('What is two plus two?'),
        { role: 'assistant', content: [{ type: 'output_text', text: answer.content[0].text }] },
        user('And three plus three?'),
      ],
    });
    const continued = await create(secret, { previous_response_id: first.id, input: [user('And three plus three?')] });
    const dropped = await create(secret, { input: [user('What is two plus two?'), user('And three plus three?')] });
    expect(referenced.usage.input_tokens).toBe(writtenOut.usage.input_tokens);
    expect(referenced.usage.input_tokens).toBe(continued.usage.input_tokens);
    expect(referenced.usage.input_tokens).toBeGreaterThan(dropped.usage.input_tokens);
    // Billed on what the engine was sent.
    expect(await billedPrompt(referenced.requestId)).toBe(writtenOut.usage.input_tokens);
  });

  it('a streamed answer is referenced too, and input_items lists the resolved item, not the reference', async () => {
    const answer = await post(secret, { input: 'Tell me a story.', stream: true });
    const events = await answer.text();
    const completed = events
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Json)
      .find((event) => event.type === 'response.completed' || event.type === 'response.incomplete')!;
    const message = messageOf(completed.response);
    const turn = await create(secret, { input: [reference(message.id), user('Shorter, please.')] });
    const listed = await fetch(`${gateway.baseURL}/responses/${turn.id}/input_items?order=asc`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const items = ((await listed.json()) as Json).data as Json[];
    expect(items.map((item) => item.type)).toEqual(['message', 'message']);
    expect(items[0]).toMatchObject({ id: message.id, role: 'assistant', content: [{ text: message.content[0].text }] });
    // A reference to a stored input item (one whose id the gateway made), and to a resolved one
    // again: no loop.
    const again = await create(secret, { input: [reference(items[1]!.id), reference(items[0]!.id)] });
    expect(again.output.length).toBeGreaterThan(0);
  });

  it('an unknown reference is a 400 naming it, before anything is billed', async () => {
    for (const id of ['msg_doesnotexist', `msg_${'0'.repeat(64)}`]) {
      const answer = await post(secret, { input: [user('Hi.'), reference(id)] });
      const body = (await answer.json()) as Json;
      expect(answer.status).toBe(400);
      expect(body.error).toMatchObject({ code: 'invalid_request', message: `Item with id '${id}' not found.` });
      expect(body.error.details).toEqual([{ field: 'input[1].id', message: expect.any(String) }]);
    }
    const missingId = await post(secret, { input: [{ type: 'item_reference' }] });
    expect(missingId.status).toBe(400);
  });

  it("another organization's item is the same 400, byte for byte, as an id never made", async () => {
    const first = await create(secret, { input: 'A secret of the first organization.' });
    const id = messageOf(first).id as string;
    const foreign = await post(other, { input: [reference(id)] });
    const foreignBytes = await foreign.text();
    // The same id, once its response is gone: nothing in the answer tells the two apart.
    const deleted = await fetch(`${gateway.baseURL}/responses/${first.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(deleted.status).toBe(200);
    const gone = await post(secret, { input: [reference(id)] });
    expect(foreign.status).toBe(400);
    expect(gone.status).toBe(400);
    expect(foreignBytes).toBe(await gone.text());
    expect(foreignBytes).toContain(id);
  });

  it('the same reference twice is the item twice; more than TOLLGATE_RESPONSES_MAX_REFERENCES is a 400', async () => {
    const first = await create(secret, { input: 'Count to three.' });
    const answer = messageOf(first);
    // Every reference of a request in one read of the store, whatever their number.
    const store = gateway.services.responseStore;
    const read = store.referencedItems.bind(store);
    const reads: string[][] = [];
    store.referencedItems = (orgId, ids) => {
      reads.push(ids);
      return read(orgId, ids);
    };
    const twice = await create(secret, { input: [reference(answer.id), reference(answer.id), user('Again.')] });
    store.referencedItems = read;
    expect(reads).toEqual([[answer.id]]);
    const assistant = { role: 'assistant', content: [{ type: 'output_text', text: answer.content[0].text }] };
    const writtenOut = await create(secret, { input: [assistant, assistant, user('Again.')] });
    expect(twice.usage.input_tokens).toBe(writtenOut.usage.input_tokens);
    const tooMany = await post(secret, {
      input: Array.from({ length: MAX_REFERENCES + 1 }, () => reference(answer.id)),
    });
    expect(tooMany.status).toBe(400);
    const body = (await tooMany.json()) as Json;
    expect(JSON.stringify(body.error)).toContain('TOLLGATE_RESPONSES_MAX_REFERENCES');
  });

  it('a conversation turn resolves its references and appends the resolved items', async () => {
    const first = await create(secret, { input: 'Name a colour.' });
    const answer = messageOf(first);
    const created = await fetch(`${gateway.baseURL}/conversations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ items: [{ type: 'message', role: 'user', content: 'Name a colour.' }] }),
    });
    const conversation = ((await created.json()) as Json).id as string;
    const turn = await create(secret, { conversation, input: [reference(answer.id), user('Another one.')] });
    const writtenOut = await create(secret, {
      input: [
        user('Name a colour.'),
        { role: 'assistant', content: [{ type: 'output_text', text: answer.content[0].text }] },
        user('Another one.'),
      ],
    });
    expect(turn.usage.input_tokens).toBe(writtenOut.usage.input_tokens);
    const listed = await fetch(`${gateway.baseURL}/conversations/${conversation}/items?order=asc`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    const items = ((await listed.json()) as Json).data as Json[];
    expect(items.map((item) => item.type)).not.toContain('item_reference');
    expect(items[1]).toMatchObject({ type: 'message', role: 'assistant' });
  });
});
