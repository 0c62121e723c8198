import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemId } from '../../../src/gateway/requests/responses/answer.js';
import type { StoredResponse } from '../../../src/gateway/stored-responses/store.js';
import { expectError } from '../../helpers/envelope.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { openApiErrors } from '../../helpers/openapi.js';

const stores = await oneStore();
const DAY_MS = 86_400_000;

type Tenant = { orgId: string; keyId: string; secret: string };

/** A response object as `POST /v1/responses` returns one (valid against OpenAI's `Response` schema). */
function responseObject(id: string, previous: string | null, text: string): Record<string, unknown> {
  return {
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status: 'completed',
    completed_at: Math.floor(Date.now() / 1000),
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model: 'sim-chat',
    output: [
      {
        type: 'message',
        id: `msg_out_${id}`,
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
      },
    ],
    parallel_tool_calls: true,
    previous_response_id: previous,
    reasoning: { effort: null, summary: null },
    store: true,
    temperature: 1,
    text: { format: { type: 'text' } },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage: {
      input_tokens: 5,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: 1,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 6,
    },
    metadata: {},
  };
}

describe.each(stores)('GET, DELETE /v1/responses/{id} and its input_items (%s)', (kind) => {
  let gateway: TestGateway;
  let a: Tenant;
  let b: Tenant;
  let clientA: OpenAI;
  let clientB: OpenAI;
  let count = 0;

  beforeAll(async () => {
    // Compiling OpenAI's spec holds this process for seconds; done before the gateway has
    // connections that would idle out meanwhile.
    openApiErrors('ResponseItemList', {});
    openApiErrors('Response', {});
    gateway = await startTestGateway(kind);
    a = await gateway.tenant();
    b = await gateway.tenant();
    clientA = new OpenAI({ apiKey: a.secret, baseURL: gateway.baseURL, maxRetries: 0 });
    clientB = new OpenAI({ apiKey: b.secret, baseURL: gateway.baseURL, maxRetries: 0 });
  });
  afterAll(async () => {
    await gateway?.close();
  });

  /** Stores a turn of `who`'s the way the create route does (it is on another branch). */
  async function stored(
    who: Tenant,
    options: { previous?: string | null; items?: number; ageDays?: number } = {},
  ): Promise<StoredResponse> {
    count += 1;
    const id = itemId('resp');
    const previous = options.previous ?? null;
    const input = Array.from({ length: options.items ?? 1 }, (_, i) => ({
      id: `msg_${id}_${i + 1}`,
      type: 'message',
      role: 'user',
      status: 'completed',
      content: [{ type: 'input_text', text: `question ${i + 1}` }],
    }));
    const turn: StoredResponse = {
      id,
      orgId: who.orgId,
      keyId: who.keyId,
      model: 'sim-chat',
      createdAt: new Date(Date.now() - (options.ageDays ?? 0) * DAY_MS),
      previousResponseId: previous,
      input,
      response: responseObject(id, previous, `answer ${count}`),
    };
    await gateway.services.responseStore.save(turn);
    return turn;
  }

  function call(secret: string | null, method: string, path: string): Promise<Response> {
    return fetch(`${gateway.baseURL}/responses/${path}`, {
      method,
      headers: secret ? { authorization: `Bearer ${secret}` } : {},
    });
  }

  it('gives the stored response back through the official client, in the shape of OpenAI’s spec', async () => {
    const turn = await stored(a);
    const retrieved = await clientA.responses.retrieve(turn.id);
    expect(retrieved).toMatchObject(turn.response);
    expect(retrieved.output_text).toMatch(/^answer /);
    const raw = await call(a.secret, 'GET', turn.id);
    expect(openApiErrors('Response', await raw.json())).toEqual([]);
  });

  it('pages input items as OpenAI does: newest first by default, limit, after, order', async () => {
    const turn = await stored(a, { items: 5 });
    const ids = turn.input.map((item) => item.id as string);
    const walked: string[] = [];
    for await (const item of clientA.responses.inputItems.list(turn.id, { limit: 2 })) walked.push(item.id);
    expect(walked).toEqual([...ids].reverse());
    const page = await clientA.responses.inputItems.list(turn.id, { limit: 2, order: 'asc', after: ids[0] });
    expect(page.data.map((item) => item.id)).toEqual(ids.slice(1, 3));
    const raw = await call(a.secret, 'GET', `${turn.id}/input_items?order=asc&limit=3`);
    const body = (await raw.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ object: 'list', first_id: ids[0], last_id: ids[2], has_more: true });
    expect(openApiErrors('ResponseItemList', body)).toEqual([]);
  });

  it('answers 400 for a limit, order or after it cannot use', async () => {
    const turn = await stored(a, { items: 2 });
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=2.5', 'order=newest', `after=msg_not_here`]) {
      const error = await expectError(
        await call(a.secret, 'GET', `${turn.id}/input_items?${query}`),
        400,
        'invalid_request',
        'invalid_request_error',
      );
      expect(error.message).toMatch(/limit|order|after/);
    }
    // A NUL in a cursor is the cursor's 400 (it was the 404 "no such route" of a NUL in the path).
    for (const field of ['after', 'before']) {
      for (const value of ['%00', 'msg_%00x']) {
        const response = await call(a.secret, 'GET', `${turn.id}/input_items?${field}=${value}`);
        const error = await expectError(response, 400, 'invalid_request', 'invalid_request_error');
        expect(error.details).toEqual([{ field, message: expect.any(String) }]);
        expect(error.message).toContain(field);
      }
    }
  });

  it('deletes a response as OpenAI does; the turns after it stay readable', async () => {
    const first = await stored(a);
    const second = await stored(a, { previous: first.id });
    const raw = await call(a.secret, 'DELETE', first.id);
    expect(raw.status).toBe(200);
    expect(await raw.json()).toEqual({ id: first.id, object: 'response', deleted: true });
    await expect(clientA.responses.retrieve(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(clientA.responses.delete(first.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await clientA.responses.retrieve(second.id)).id).toBe(second.id);
    await clientA.responses.delete(second.id);
    await expect(clientA.responses.inputItems.list(second.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('answers 404 for an expired response, before the purge has run', async () => {
    const old = await stored(a, { ageDays: gateway.services.config.responses.retentionDays + 1 });
    await expectError(await call(a.secret, 'GET', old.id), 404, 'not_found', 'invalid_request_error');
  });

  it('to another organization’s key, a response is unknown: 404 with the same body, and it is still there', async () => {
    const turn = await stored(a, { items: 3 });
    const unknown = itemId('resp');
    for (const [method, path] of [
      ['GET', ''],
      ['GET', '/input_items'],
      ['DELETE', ''],
    ] as const) {
      const theirs = await call(b.secret, method, `${turn.id}${path}`);
      const none = await call(b.secret, method, `${unknown}${path}`);
      expect([theirs.status, none.status]).toEqual([404, 404]);
      expect((await theirs.text()).replaceAll(turn.id, 'ID')).toBe((await none.text()).replaceAll(unknown, 'ID'));
    }
    await expect(clientB.responses.retrieve(turn.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(clientB.responses.delete(turn.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(clientB.responses.inputItems.list(turn.id)).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect(await clientA.responses.retrieve(turn.id)).toMatchObject(turn.response);
    expect((await clientA.responses.inputItems.list(turn.id)).data).toHaveLength(3);
  });

  it('needs a key', async () => {
    const turn = await stored(a);
    for (const method of ['GET', 'DELETE'])
      await expectError(await call(null, method, turn.id), 401, 'unauthorized', 'auth_error');
    await expectError(
      await call('sk-gw-not-a-key', 'GET', `${turn.id}/input_items`),
      401,
      'unauthorized',
      'auth_error',
    );
    expect((await clientA.responses.retrieve(turn.id)).id).toBe(turn.id);
  });
});
