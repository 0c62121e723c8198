import type { Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eq } from 'drizzle-orm';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdFor } from '../../../src/gateway/billing/holds.js';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { oneStore, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { engineStub } from '../../helpers/engine-stub.js';
import { until } from '../../helpers/wait.js';

const stores = await oneStore();
const PROMPT_TOKENS = 9;

/**
 * An engine that answers as vLLM does for `n`: `n` choices of `max_tokens`
 * tokens each, usage summed over them; streamed as one chunk a token, each
 * with its choice's index. It waits for `release()` before answering, so a
 * test can read the hold while the call is in flight.
 */
function startChoicesEngine() {
  let answering: Array<() => void> = [];
  const seen: Array<Record<string, unknown>> = [];
  const server: Server = engineStub((text, res) => {
    const body = JSON.parse(text) as { n?: number; max_tokens: number; stream?: boolean };
    seen.push(body);
    const n = body.n ?? 1;
    const usage = {
      prompt_tokens: PROMPT_TOKENS,
      completion_tokens: n * body.max_tokens,
      total_tokens: PROMPT_TOKENS + n * body.max_tokens,
    };
    answering.push(() => {
      const head = { id: 'c1', created: 1, model: 'engine' };
      if (!body.stream) {
        res.setHeader('content-type', 'application/json');
        const choices = Array.from({ length: n }, (_, index) => ({
          index,
          message: { role: 'assistant', content: 'tok '.repeat(body.max_tokens) },
          finish_reason: 'length',
        }));
        return res.end(JSON.stringify({ ...head, object: 'chat.completion', choices, usage }));
      }
      res.setHeader('content-type', 'text/event-stream');
      const chunk = (fields: object) =>
        res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', ...fields })}\n\n`);
      for (let index = 0; index < n; index++) {
        for (let t = 0; t < body.max_tokens; t++)
          chunk({ choices: [{ index, delta: { content: 'tok ' }, logprobs: null, finish_reason: null }] });
        chunk({ choices: [{ index, delta: {}, logprobs: null, finish_reason: 'length' }] });
      }
      chunk({ choices: [], usage });
      res.end('data: [DONE]\n\n');
    });
  });
  const release = () => {
    const waiting = answering;
    answering = [];
    for (const answer of waiting) answer();
    return waiting.length;
  };
  return { server, seen, release, waiting: () => answering.length };
}

describe.each(stores)('every choice is held for and billed (%s)', (store) => {
  let engine: ReturnType<typeof startChoicesEngine>;
  let dir: string;
  let gateway: TestGateway;
  const chatPrice = { inputPerToken: 150n, outputPerToken: 600n };

  beforeAll(async () => {
    engine = startChoicesEngine();
    await new Promise<void>((resolve) => engine.server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(engine.server.address() as AddressInfo).port}`;
    dir = await mkdtemp(path.join(tmpdir(), 'tollgate-choices-'));
    const enginesFile = path.join(dir, 'engines.json');
    await writeFile(
      enginesFile,
      JSON.stringify({ engines: [{ kind: 'static', model: 'sim-chat', url, served_model_name: 'engine' }] }),
    );
    gateway = await startTestGateway(store, { TOLLGATE_ENGINES_FILE: enginesFile, TOLLGATE_MAX_CHOICES: '16' });
  });
  afterAll(async () => {
    engine?.release();
    await gateway?.close();
    await new Promise((resolve) => engine?.server.close(resolve));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it.each([false, true])(
    'n: 8, max_tokens: 50 is charged for eight choices, and the hold covered them (stream: %s)',
    async (stream) => {
      const tenant = await gateway.tenant({ credit: '10.00' });
      const body = {
        model: 'sim-chat',
        messages: [{ role: 'user', content: 'eight ways to say hello' }],
        max_tokens: 50,
        n: 8,
        stream,
      };
      const text = JSON.stringify(body);
      const responding = fetch(`${gateway.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.secret}`, 'content-type': 'application/json' },
        body: text,
      });
      await until('the engine holds the call', () => engine.waiting() === 1);
      const { holds } = await gateway.services.gateKeeper.gate.walletState(tenant.orgId);
      const expectedHold = holdFor(
        { bodyBytes: Buffer.byteLength(text), body, task: 'chat', contextLength: 8192 },
        chatPrice,
      );
      expect(expectedHold.bounds.completionTokens).toBe(400);
      expect(holds.map((h) => h.amount)).toEqual([expectedHold.holdNanos]);
      engine.release();
      const response = await responding;
      expect(response.status).toBe(200);
      const answer = await response.text();
      if (stream) expect(new Set([...answer.matchAll(/"index":(\d+)/g)].map((m) => m[1])).size).toBe(8);
      else expect((JSON.parse(answer) as { choices: unknown[] }).choices).toHaveLength(8);
      await gateway.charged();
      const [record] = await gateway.services.db
        .select()
        .from(usageRecords)
        .where(eq(usageRecords.id, response.headers.get('x-request-id')!));
      const cost = BigInt(PROMPT_TOKENS) * 150n + 400n * 600n;
      expect(record).toMatchObject({
        promptTokens: PROMPT_TOKENS,
        completionTokens: 400,
        usageSource: 'upstream',
        cost,
      });
      expect(cost).toBeLessThanOrEqual(holds[0]!.amount);
    },
  );

  it('refuses counts the bill cannot read as the engine would, naming the setting', async () => {
    const tenant = await gateway.tenant();
    const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
    const messages = [{ role: 'user' as const, content: 'hi' }];
    const sent = engine.seen.length;
    for (const n of ['64', 64.5, 17, 0, -1, true]) {
      const refused = await client.chat.completions
        .create({ model: 'sim-chat', messages, max_tokens: 5, n: n as number })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
      expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(
        /n must be an integer from 1 to 16 \(TOLLGATE_MAX_CHOICES\)/,
      );
    }
    const bestOf = await client.chat.completions
      .create({ model: 'sim-chat', messages, max_tokens: 5, best_of: '3' } as never)
      .catch((error: unknown) => error);
    expect((bestOf as Error).message).toMatch(/best_of must be an integer/);
    expect(engine.seen.length).toBe(sent);
  });
});

describe.each(stores)('n against the simulator (%s)', (store) => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startTestGateway(store);
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it.each([false, true])(
    'n: 8, max_tokens: 50: the usage record is what the simulator reported for eight choices (stream: %s)',
    async (stream) => {
      const tenant = await gateway.tenant();
      const client = new OpenAI({ baseURL: gateway.baseURL, apiKey: tenant.secret, maxRetries: 0 });
      const body = {
        model: 'sim-chat',
        messages: [{ role: 'user' as const, content: 'eight ways to say hello' }],
        max_tokens: 50,
        n: 8,
      };
      let reported: OpenAI.CompletionUsage | undefined;
      let requestId: string | null;
      if (stream) {
        const { data, response } = await client.chat.completions
          .create({ ...body, stream: true, stream_options: { include_usage: true } })
          .withResponse();
        const indexes = new Set<number>();
        for await (const chunk of data) {
          for (const choice of chunk.choices) indexes.add(choice.index);
          reported = chunk.usage ?? reported;
        }
        expect(indexes.size).toBe(8);
        requestId = response.headers.get('x-request-id');
      } else {
        const { data, response } = await client.chat.completions.create(body).withResponse();
        expect(data.choices).toHaveLength(8);
        reported = data.usage;
        requestId = response.headers.get('x-request-id');
      }
      // The simulator's answers end by themselves after 16 tokens: eight of them are more than one
      // choice's bound of 50.
      const { prompt_tokens: promptTokens, completion_tokens: completionTokens } = reported!;
      expect(completionTokens).toBe(8 * 16);
      await gateway.charged();
      const [record] = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.id, requestId!));
      const cost = BigInt(promptTokens) * 150n + BigInt(completionTokens) * 600n;
      expect(record).toMatchObject({ promptTokens, completionTokens, usageSource: 'upstream', cost });
    },
  );
});
