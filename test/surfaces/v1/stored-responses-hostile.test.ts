import type { PGlite } from '@electric-sql/pglite';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemId } from '../../../src/gateway/requests/responses/answer.js';
import type { StoredResponse } from '../../../src/gateway/stored-responses/store.js';
import { STORE_TIMEOUT_MS } from '../../../src/shared/db/timeout.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { createTestDatabase, postgresAdminUrl } from '../../helpers/services.js';
import { startTcpProxy } from '../../helpers/tcp-proxy.js';

const stores = await availableStores();
/**
 * A request the store cannot answer must be answered within its timeout; a little more for the
 * answer itself.
 */
const ANSWERED_WITHIN_MS = STORE_TIMEOUT_MS + 3_000;

/**
 * The gateway, and a hand on its database: stop it answering (and let it go on), count the bytes it
 * sends back and the statements that name the stored responses' tables.
 */
interface Harness {
  gateway: TestGateway;
  pause(): void;
  resume(): void;
  bytesRead(): () => number;
  storeStatements(): () => number;
  close(): Promise<void>;
}

/**
 * PostgreSQL behind a TCP proxy the test controls; PGlite with its client's calls held at a gate
 * the test controls.
 */
async function harness(kind: 'pglite' | 'postgres'): Promise<Harness> {
  // The catalog poll's first read comes after the tests: a key warmed before a pause stays known.
  const env = { TOLLGATE_CATALOG_POLL_MS: '60000' };
  if (kind === 'postgres') {
    const database = await createTestDatabase();
    const proxy = await startTcpProxy(Number(new URL(postgresAdminUrl).port || 5432));
    const url = new URL(database.url);
    url.port = String(proxy.port);
    url.hostname = '127.0.0.1';
    const gateway = await startTestGateway('pglite', { ...env, DATABASE_URL: url.toString() });
    return {
      gateway,
      pause: () => proxy.hang(),
      resume: () => proxy.resume(),
      bytesRead: () => proxy.replyBytes(),
      storeStatements: () => proxy.count('stored_response'),
      async close() {
        proxy.resume();
        await gateway.close();
        await proxy.stop();
        await database.drop();
      },
    };
  }
  const gateway = await startTestGateway('pglite', env);
  const client = (gateway.services.db as unknown as { $client: PGlite }).$client;
  let held: Promise<void> | null = null;
  let release = () => {};
  const counters: Array<{ n: number }> = [];
  const statementCounters: Array<{ n: number }> = [];
  const query = client.query.bind(client);
  const transaction = client.transaction.bind(client);
  const sizeOf = (rows: unknown) =>
    JSON.stringify(rows, (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value)).length;
  client.query = (async (...args: Parameters<typeof query>) => {
    if (args[0].includes('stored_response')) for (const counter of statementCounters) counter.n += 1;
    while (held) await held;
    const result = await query(...args);
    for (const counter of counters) counter.n += sizeOf(result.rows);
    return result;
  }) as typeof client.query;
  client.transaction = (async (...args: Parameters<typeof transaction>) => {
    while (held) await held;
    return transaction(...args);
  }) as typeof client.transaction;
  return {
    gateway,
    pause() {
      held = new Promise((resolve) => (release = resolve));
    },
    resume() {
      held = null;
      release();
    },
    bytesRead() {
      const counter = { n: 0 };
      counters.push(counter);
      return () => counter.n;
    },
    storeStatements() {
      const counter = { n: 0 };
      statementCounters.push(counter);
      return () => counter.n;
    },
    async close() {
      held = null;
      release();
      await gateway.close();
    },
  };
}

describe.each(stores)('stored responses against a hostile client (%s)', (kind) => {
  let h: Harness;
  let tenant: { orgId: string; keyId: string; secret: string };

  beforeAll(async () => {
    h = await harness(kind);
    tenant = await h.gateway.tenant();
  });
  afterAll(async () => {
    await h?.close();
  });

  const call = (method: string, path: string, body?: unknown, secret = tenant.secret) =>
    fetch(`${h.gateway.baseURL}/responses${path}`, {
      method,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(ANSWERED_WITHIN_MS + 5_000),
    });

  /** A turn stored as the create route stores one, with `items` input messages. */
  async function stored(items: number, previous: string | null = null): Promise<StoredResponse> {
    const id = itemId('resp');
    const turn: StoredResponse = {
      id,
      orgId: tenant.orgId,
      keyId: tenant.keyId,
      model: 'sim-chat',
      createdAt: new Date(),
      previousResponseId: previous,
      input: Array.from({ length: items }, (_, i) => ({
        id: `msg_${i}`,
        type: 'message',
        role: 'user',
        content: [{ type: 'input_text', text: `question ${i}` }],
      })),
      response: { id, object: 'response', status: 'completed', model: 'sim-chat', output: [] },
    };
    await h.gateway.services.responseStore.save(turn);
    return turn;
  }

  it('input_items?limit=1 on 50,000 stored items reads one item from the database, not the whole input', async () => {
    const turn = await stored(50_000);
    const read = h.bytesRead();
    for (let i = 0; i < 3; i++) {
      const response = await call('GET', `/${turn.id}/input_items?limit=1`);
      expect(response.status).toBe(200);
      const page = (await response.json()) as { data: Array<{ id: string }>; has_more: boolean; first_id: string };
      expect(page).toMatchObject({ first_id: 'msg_49999', has_more: true });
      expect(page.data.map((item) => item.id)).toEqual(['msg_49999']);
    }
    // Three pages of one item: a few hundred bytes each from the database (the old layout read the
    // 4 MB input each time).
    expect(read()).toBeLessThan(3 * 2_000);
    const after = (await (await call('GET', `/${turn.id}/input_items?limit=2&order=asc&after=msg_2`)).json()) as {
      data: Array<{ id: string }>;
    };
    expect(after.data.map((item) => item.id)).toEqual(['msg_3', 'msg_4']);
  }, 120_000);

  it('stores only what a later turn sends or a read gives back: megabytes of dropped fields are not kept', async () => {
    const junk = 'x'.repeat(400_000);
    const response = await call('POST', '', {
      model: 'sim-chat',
      max_output_tokens: 4,
      input: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }], junk },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: junk },
        { type: 'message', role: 'user', content: [{ type: 'input_file', filename: 'a.pdf', file_data: junk }] },
        { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: junk } },
      ],
      tools: [
        { type: 'function', name: 'f', parameters: { type: 'object', properties: {} }, junk },
        { type: 'web_search', junk },
      ],
      tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [{ type: 'function', name: 'f' }], junk },
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { id: string; store: boolean };
    expect(answer.store).toBe(true);
    const [row] = rows<{ bytes: number }>(
      await h.gateway.services.db.execute(sql`select bytes from stored_responses where id = ${answer.id}`),
    );
    // About 2.4 MB sent; what the conversation uses is a few hundred bytes of it.
    expect(row!.bytes).toBeLessThan(4_000);
    const again = (await (await call('GET', `/${answer.id}`)).json()) as { tools: Array<{ name?: string }> };
    expect(again.tools).toEqual([
      { type: 'function', name: 'f', parameters: { type: 'object', properties: {} }, strict: null },
    ]);
    const items = (await (await call('GET', `/${answer.id}/input_items?order=asc`)).json()) as { data: unknown[] };
    expect(items.data).toMatchObject([
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hello' }] },
      { type: 'message', content: [] },
    ]);
    const next = await call('POST', '', {
      model: 'sim-chat',
      max_output_tokens: 4,
      input: 'and?',
      previous_response_id: answer.id,
    });
    expect(next.status).toBe(200);
  });

  it('refuses malformed ids with a 400 and never repeats a long one: before any database call', async () => {
    const read = h.storeStatements();
    const previous = async (id: string) =>
      call('POST', '', { model: 'sim-chat', max_output_tokens: 4, input: 'hi', previous_response_id: id });
    for (const id of ['resp_\u0000abc', 'resp_\udc00', 'resp_ab\u202ecd', 'resp_é']) {
      const response = await previous(id);
      expect(response.status).toBe(400);
      expect(await response.text()).toContain('previous_response_id');
    }
    // Invalid UTF-8 on the wire.
    const raw = Buffer.concat([
      Buffer.from('{"model":"sim-chat","input":"hi","previous_response_id":"resp_'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}'),
    ]);
    expect((await call('POST', '', raw.toString('latin1'))).status).toBeLessThan(500);
    const rawResponse = await fetch(`${h.gateway.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.secret}`, 'content-type': 'application/json' },
      body: raw,
    });
    expect(rawResponse.status).toBe(400);
    for (const path of ['/resp_%FF%FE', '/resp_%FF/input_items', '/%E2%80%AE', '/resp_%20a']) {
      const response = await call('GET', path);
      expect(`${path} ${response.status}`).toBe(`${path} 400`);
    }
    expect((await call('DELETE', '/resp_%C3%A9')).status).toBe(400);
    // A NUL anywhere in a path is the app's 404 (`shared/http/request.ts`), before any route.
    expect((await call('GET', '/resp_%00abc')).status).toBe(404);
    const long = await previous(`resp_${'a'.repeat(1_000_000)}`);
    expect(long.status).toBe(404);
    expect((await long.text()).length).toBeLessThan(400);
    // Ids the gateway cannot have made were answered without the database.
    expect(read()).toBe(0);
  });

  it('counts GET, DELETE and input_items against the key’s requests per minute, before reading the store', async () => {
    const limited = await h.gateway.tenant({ key: { requestsPerMinute: 1 } });
    const turn = await stored(3);
    // Another key of the same organization reads it: the limited key is the organization's too.
    const secret = limited.secret;
    const first = await call('GET', `/${itemId('resp')}`, undefined, secret);
    expect(first.status).toBe(404);
    const read = h.storeStatements();
    for (const [method, path] of [
      ['GET', `/${turn.id}`],
      ['GET', `/${turn.id}/input_items`],
      ['DELETE', `/${turn.id}`],
    ] as const) {
      const response = await call(method, path, undefined, secret);
      expect(response.status).toBe(429);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    expect(read()).toBe(0);
  });

  it('a database that stops answering: 503 within the timeout on GET, DELETE, input_items and previous_response_id; a response is still answered, with store false', async () => {
    const turn = await stored(3);
    // The key, the model and its price are known before the pause (the request path's cache).
    expect((await call('GET', `/${turn.id}`)).status).toBe(200);
    expect(
      (await call('POST', '', { model: 'sim-chat', max_output_tokens: 4, input: 'hi', store: false })).status,
    ).toBe(200);
    h.pause();
    try {
      const started = performance.now();
      const timed = async (request: Promise<Response>) => {
        const response = await request;
        return { status: response.status, body: await response.text(), ms: performance.now() - started };
      };
      const [get, items, remove, continued, created] = await Promise.all([
        timed(call('GET', `/${turn.id}`)),
        timed(call('GET', `/${turn.id}/input_items?limit=1`)),
        timed(call('DELETE', `/${turn.id}`)),
        timed(
          call('POST', '', { model: 'sim-chat', max_output_tokens: 4, input: 'hi', previous_response_id: turn.id }),
        ),
        timed(call('POST', '', { model: 'sim-chat', max_output_tokens: 4, input: 'hi' })),
      ]);
      for (const answer of [get, items, remove, continued]) {
        expect(`${answer.status} ${answer.body}`).toMatch(/^503 .*responses_unavailable/);
        expect(answer.ms).toBeLessThan(ANSWERED_WITHIN_MS);
      }
      expect(`${created.status} ${created.body}`).toMatch(/^200 /);
      expect(JSON.parse(created.body)).toMatchObject({ object: 'response', store: false });
      expect(created.ms).toBeLessThan(ANSWERED_WITHIN_MS);
    } finally {
      h.resume();
    }
    // Back: the stored response was neither lost nor deleted by the timed-out DELETE's absence of
    // an answer.
    expect([200, 404]).toContain((await call('GET', `/${turn.id}`)).status);
    await h.gateway.charged(20_000);
  }, 60_000);
});

function rows<T>(result: unknown): T[] {
  return Array.isArray(result) ? (result as T[]) : ((result as { rows: T[] }).rows ?? []);
}
