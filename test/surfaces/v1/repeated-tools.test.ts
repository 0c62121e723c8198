import type { Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { engineStub } from '../../helpers/engine-stub.js';

// A key's tools and system prompt, sent alike every turn, are not parsed again
// (shared/http/repeated-members.ts): its later turns take the values its first turn parsed to,
// shared and frozen. Every protocol must then send the engine the very bytes a fresh parse would,
// answer as before (nothing on the path may change a shared value) and bill the engine's own count;
// and one key's values never reach another key's requests.

const stores = await oneStore();
const PROMPT_TOKENS = 321;

/**
 * A chat engine that keeps every body it is sent as text and answers a word, with usage of its own
 * count.
 */
function startRecordingEngine() {
  const seen: string[] = [];
  const server: Server = engineStub((text, res) => {
    seen.push(text);
    const usage = { prompt_tokens: PROMPT_TOKENS, completion_tokens: 2, total_tokens: PROMPT_TOKENS + 2 };
    const head = { id: 'c1', object: 'chat.completion', created: 1, model: 'engine' };
    const stream = (JSON.parse(text) as { stream?: boolean }).stream === true;
    if (!stream) {
      res.setHeader('content-type', 'application/json');
      const message = { role: 'assistant', content: 'ok ok' };
      return res.end(JSON.stringify({ ...head, choices: [{ index: 0, message, finish_reason: 'stop' }], usage }));
    }
    res.setHeader('content-type', 'text/event-stream');
    const chunk = (fields: object) =>
      res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', ...fields })}\n\n`);
    chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'ok' }, finish_reason: null }] });
    chunk({ choices: [{ index: 0, delta: { content: ' ok' }, finish_reason: 'stop' }] });
    chunk({ choices: [], usage });
    res.end('data: [DONE]\n\n');
  });
  return { server, seen };
}

/** Tools of about 7 KB, as an agent sends every turn. */
const described = (i: number) => `${'Reads, edits and runs files in the working tree. '.repeat(25)}(${i})`;
const schema = { type: 'object', properties: { path: { type: 'string', description: 'a path' } }, required: ['path'] };
const anthropicTools = Array.from({ length: 5 }, (_, i) => ({
  name: `Tool${i}`,
  description: described(i),
  input_schema: schema,
}));
const chatTools = anthropicTools.map((t) => ({
  type: 'function',
  function: { name: t.name, description: t.description, parameters: t.input_schema },
}));
const responsesTools = anthropicTools.map((t) => ({
  type: 'function',
  name: t.name,
  description: t.description,
  parameters: t.input_schema,
  strict: false,
}));
const system = [{ type: 'text', text: 'You are a careful coding agent. '.repeat(100) }];

const turns: Array<{ route: string; body: (turn: string, stream: boolean) => Record<string, unknown> }> = [
  {
    route: '/v1/chat/completions',
    body: (turn, stream) => ({
      model: 'sim-chat',
      max_tokens: 8,
      tools: chatTools,
      messages: [
        { role: 'system', content: system[0]!.text },
        { role: 'user', content: turn },
      ],
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    }),
  },
  {
    route: '/v1/messages',
    body: (turn, stream) => ({
      model: 'sim-chat',
      max_tokens: 8,
      system,
      tools: anthropicTools,
      tool_choice: { type: 'auto' },
      messages: [{ role: 'user', content: turn }],
      ...(stream ? { stream: true } : {}),
    }),
  },
  {
    route: '/v1/responses',
    body: (turn, stream) => ({
      model: 'sim-chat',
      max_output_tokens: 8,
      store: false,
      instructions: system[0]!.text,
      tools: responsesTools,
      input: [{ role: 'user', content: turn }],
      ...(stream ? { stream: true } : {}),
    }),
  },
];

describe.each(stores)("a key's repeated tools, not parsed again (%s)", (store) => {
  let dir: string;
  let engine: ReturnType<typeof startRecordingEngine>;
  let gateway: TestGateway;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-repeated-tools-'));
    engine = startRecordingEngine();
    await new Promise<void>((resolve) => engine.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(engine.server.address() as AddressInfo).port}`;
    const enginesFile = path.join(dir, 'engines.json');
    await writeFile(
      enginesFile,
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url, served_model_name: 'engine' }] }),
    );
    gateway = await startTestGateway(store, { TOLLGATE_ENGINES_FILE: enginesFile });
  }, 120_000);
  afterAll(async () => {
    await gateway?.close();
    await new Promise((resolve) => engine?.server.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function send(secret: string, route: string, body: Record<string, unknown>) {
    const before = engine.seen.length;
    const response = await fetch(`${gateway.url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(engine.seen.length).toBe(before + 1);
    return { sent: engine.seen.at(-1)!, requestId: response.headers.get('x-request-id')!, text };
  }

  it.each(turns)('$route: every turn sends the engine what a fresh parse sends, billed its count', async (route) => {
    const { secret } = await gateway.tenant({ credit: '10.00' });
    const fresh = (await gateway.tenant({ credit: '10.00' })).secret;
    for (const stream of [false, true]) {
      for (const turn of ['Fix the failing test.', 'Now run it.', 'And commit it.']) {
        const kept = await send(secret, route.route, route.body(turn, stream));
        // Another key's first turn: parsed whole, never given the first key's values.
        const whole = await send(fresh, route.route, route.body(turn, stream));
        expect(kept.sent).toBe(whole.sent);
        expect(kept.text.length).toBe(whole.text.length);
        await gateway.charged();
        const [record] = await gateway.services.db
          .select()
          .from(usageRecords)
          .where(eq(usageRecords.id, kept.requestId));
        expect(record).toMatchObject({ promptTokens: PROMPT_TOKENS, completionTokens: 2, usageSource: 'upstream' });
      }
    }
  });

  it("sends the engine a body's own tools when another message holds the kept ones' bytes", async () => {
    const { secret } = await gateway.tenant({ credit: '10.00' });
    const route = turns[1]!;
    await send(secret, route.route, route.body('Fix the failing test.', false));
    // The kept tools' bytes in its metadata (before the top-level tools), and one small tool of its
    // own at the top.
    const hostile = {
      ...route.body('Fix the failing test.', false),
      metadata: { user_id: 'u', tools: anthropicTools },
      tools: [{ name: 'Only', description: 'the one tool', input_schema: schema }],
    };
    const raw = JSON.stringify(hostile);
    expect(raw.indexOf(JSON.stringify(anthropicTools))).toBeGreaterThan(0);
    const response = await fetch(`${gateway.url}${route.route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: raw,
    });
    expect(response.status).toBe(200);
    const sent = JSON.parse(engine.seen.at(-1)!) as { tools: Array<{ function: { name: string } }> };
    expect(sent.tools.map((t) => t.function.name)).toEqual(['Only']);
  });
});
