import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedResponses } from '../../../src/shared/db/schema.js';
import { availableStores, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { engineStub } from '../../helpers/engine-stub.js';

const stores = await availableStores();
const DAY_MS = 86_400_000;
const RETENTION_DAYS = 7;

/**
 * An engine whose clock lies: every answer (JSON or stream) says it was made at `created` (Unix
 * seconds).
 */
function lyingClockEngine() {
  let created = 1;
  const server: Server = engineStub((text, res) => {
    const body = JSON.parse(text) as { stream?: boolean };
    const head = { id: 'chatcmpl-liar', created, model: 'engine' };
    const usage = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 };
    if (!body.stream) {
      res.setHeader('content-type', 'application/json');
      const choices = [{ index: 0, message: { role: 'assistant', content: 'hi there' }, finish_reason: 'stop' }];
      return res.end(JSON.stringify({ ...head, object: 'chat.completion', choices, usage }));
    }
    res.setHeader('content-type', 'text/event-stream');
    const chunk = (fields: object) =>
      res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', ...fields })}\n\n`);
    chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi there' }, finish_reason: null }] });
    chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    chunk({ choices: [], usage });
    res.end('data: [DONE]\n\n');
  });
  return { server, setCreated: (seconds: number) => (created = seconds) };
}

describe.each(stores)("a stored response is dated by the gateway's clock, not the engine's (%s)", (store) => {
  let engine: ReturnType<typeof lyingClockEngine>;
  let gateway: TestGateway;
  let secret: string;

  beforeAll(async () => {
    engine = lyingClockEngine();
    await new Promise<void>((resolve) => engine.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(engine.server.address() as AddressInfo).port}`;
    gateway = await startTestGateway(
      store,
      { TOLLGATE_RESPONSES_RETENTION_DAYS: String(RETENTION_DAYS) },
      { engines: { 'sim-chat': url } },
    );
    ({ secret } = await gateway.tenant());
  });
  afterAll(async () => {
    await gateway?.close();
    await new Promise((resolve) => engine?.server.close(resolve));
  });

  const call = (method: string, path: string, body?: object) =>
    fetch(`${gateway.baseURL}${path}`, {
      method,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: body ? JSON.stringify(body) : undefined,
    });

  /** A stored turn's id, read from the JSON answer or from the stream's `response.completed`. */
  async function storedTurn(stream: boolean, previous?: string): Promise<string> {
    const body = { model: 'sim-chat', input: 'hello', store: true, stream, previous_response_id: previous };
    const response = await call('POST', '/responses', body);
    expect(response.status).toBe(200);
    if (!stream) {
      const json = (await response.json()) as { id: string; store: boolean };
      expect(json.store).toBe(true);
      return json.id;
    }
    const text = await response.text();
    const completed = text.split('\n').find((line) => line.startsWith('data: {"type":"response.completed"'));
    return (JSON.parse(completed!.slice('data: '.length)) as { response: { id: string } }).response.id;
  }

  it.each([
    ['1 (1970)', 1],
    ['in 2100', Math.floor(Date.UTC(2100, 0, 1) / 1000)],
  ])('an engine answering created %s: retrievable, continued, kept for the retention setting', async (_, created) => {
    engine.setCreated(created);
    for (const stream of [false, true]) {
      const before = Date.now();
      const id = await storedTurn(stream);
      const after = Date.now();
      const got = await call('GET', `/responses/${id}`);
      expect(got.status).toBe(200);
      const shown = (await got.json()) as { created_at: number };
      expect(shown.created_at * 1000).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      expect(shown.created_at * 1000).toBeLessThanOrEqual(after);
      expect((await call('GET', `/responses/${id}/input_items`)).status).toBe(200);
      await storedTurn(false, id);
      const [row] = await gateway.services.db
        .select({ createdAt: storedResponses.createdAt, expiresAt: storedResponses.expiresAt })
        .from(storedResponses)
        .where(eq(storedResponses.id, id));
      expect(row!.createdAt.getTime()).toBeGreaterThanOrEqual(before);
      expect(row!.createdAt.getTime()).toBeLessThanOrEqual(after);
      expect(row!.expiresAt.getTime() - row!.createdAt.getTime()).toBe(RETENTION_DAYS * DAY_MS);
    }
  });
});
