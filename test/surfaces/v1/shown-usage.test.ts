import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageRecords } from '../../../src/shared/db/schema.js';
import { engineStub } from '../../helpers/engine-stub.js';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';

/**
 * Issue 68, item 3: the usage a client is shown is the usage billed, on chat, Messages and
 * Responses, JSON and stream. An engine lies in its usage (cached and reasoning counts above their
 * totals, negative, strings; totals far above what the request could use): billing holds its counts
 * to the request's bounds, and the client reads those same counts, equal to its usage record.
 * Before, chat relayed the engine's usage as it came (`cached_tokens: 1000000`, `-50`, `"100"`),
 * and Messages showed a cached read above the prompt billed.
 */
type Lie = Record<string, unknown>;

const LIES: Record<string, Lie> = {
  'cached and reasoning above everything, totals past the bounds': {
    prompt_tokens: 1_000_000,
    completion_tokens: 1_000_000,
    total_tokens: 5,
    prompt_tokens_details: { cached_tokens: 1_000_000 },
    completion_tokens_details: { reasoning_tokens: 1_000_000 },
  },
  'cached above the prompt, within the bounds': {
    prompt_tokens: 20,
    completion_tokens: 3,
    total_tokens: 23,
    prompt_tokens_details: { cached_tokens: 100 },
  },
  'negative details': {
    prompt_tokens: 20,
    completion_tokens: 3,
    total_tokens: 23,
    prompt_tokens_details: { cached_tokens: -50 },
    completion_tokens_details: { reasoning_tokens: -5 },
  },
  'details as strings, and a member of its own': {
    prompt_tokens: 20,
    completion_tokens: 3,
    total_tokens: 23,
    prompt_tokens_details: { cached_tokens: '100', audio_tokens: 7 },
    completion_tokens_details: { reasoning_tokens: '2' },
    billed_by_engine: 'free',
  },
};

/** What a client read, in the usage record's terms. */
interface Counts {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  reasoningTokens: number;
}

function fromChat(usage: any): Counts {
  expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    reasoningTokens: usage.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}

function fromMessages(usage: any): Counts {
  return {
    promptTokens: usage.input_tokens + usage.cache_read_input_tokens,
    completionTokens: usage.output_tokens,
    cachedTokens: usage.cache_read_input_tokens,
    reasoningTokens: 0,
  };
}

function fromResponses(usage: any): Counts {
  expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
  return {
    promptTokens: usage.input_tokens,
    completionTokens: usage.output_tokens,
    cachedTokens: usage.input_tokens_details.cached_tokens,
    reasoningTokens: usage.output_tokens_details.reasoning_tokens,
  };
}

/** The `data:` payloads of an SSE body, parsed (`[DONE]` left out). */
function events(text: string): any[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: {'))
    .map((line) => JSON.parse(line.slice(6)));
}

const PROTOCOLS = {
  chat: {
    path: '/chat/completions',
    body: (stream: boolean) => ({
      model: 'sim-chat',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hello there' }],
      stream,
      stream_options: stream ? { include_usage: true } : undefined,
    }),
    json: (body: any) => fromChat(body.usage),
    streamed: (all: any[]) => fromChat(all.filter((e) => e.usage).at(-1).usage),
  },
  messages: {
    path: '/messages',
    body: (stream: boolean) => ({
      model: 'sim-chat',
      max_tokens: 4,
      messages: [{ role: 'user', content: 'hello there' }],
      stream,
    }),
    json: (body: any) => fromMessages(body.usage),
    streamed: (all: any[]) => fromMessages(all.find((e) => e.type === 'message_delta').usage),
  },
  responses: {
    path: '/responses',
    body: (stream: boolean) => ({
      model: 'sim-chat',
      max_output_tokens: 4,
      input: 'hello there',
      stream,
      store: false,
    }),
    json: (body: any) => fromResponses(body.usage),
    streamed: (all: any[]) => fromResponses(all.find((e) => e.type === 'response.completed').response.usage),
  },
} as const;

describe('the usage a client is shown is the usage billed, with a lying engine', () => {
  let engine: Server;
  let gateway: TestGateway;
  let lie: Lie = {};

  beforeAll(async () => {
    engine = engineStub((text, res) => {
      const body = JSON.parse(text) as { stream?: boolean };
      const head = { id: 'chatcmpl-1', created: 1, model: 'engine' };
      if (!body.stream) {
        res.setHeader('content-type', 'application/json');
        const choices = [{ index: 0, message: { role: 'assistant', content: 'hi there' }, finish_reason: 'stop' }];
        return res.end(JSON.stringify({ ...head, object: 'chat.completion', choices, usage: lie }));
      }
      res.setHeader('content-type', 'text/event-stream');
      const chunk = (fields: object) =>
        res.write(`data: ${JSON.stringify({ ...head, object: 'chat.completion.chunk', ...fields })}\n\n`);
      chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }] });
      chunk({ choices: [{ index: 0, delta: { content: ' there' }, finish_reason: 'stop' }] });
      chunk({ choices: [], usage: lie });
      res.end('data: [DONE]\n\n');
    });
    await new Promise<void>((resolve) => engine.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(engine.address() as AddressInfo).port}`;
    gateway = await startTestGateway('pglite', {}, { engines: { 'sim-chat': url } });
  });
  afterAll(async () => {
    await gateway?.close();
    await new Promise((resolve) => engine?.close(resolve));
  });

  /**
   * Sends one request on a fresh organization's key; returns what its client read and its one usage
   * record.
   */
  async function shownAndBilled(protocol: keyof typeof PROTOCOLS, stream: boolean) {
    const { orgId, secret } = await gateway.tenant();
    const shape = PROTOCOLS[protocol];
    const response = await fetch(`${gateway.baseURL}${shape.path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'x-api-key': secret, 'content-type': 'application/json' },
      body: JSON.stringify(shape.body(stream)),
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const shown = stream ? shape.streamed(events(text)) : shape.json(JSON.parse(text));
    await gateway.charged();
    const records = await gateway.services.db.select().from(usageRecords).where(eq(usageRecords.orgId, orgId));
    expect(records).toHaveLength(1);
    const [record] = records;
    const billed = {
      promptTokens: record!.promptTokens,
      completionTokens: record!.completionTokens,
      cachedTokens: record!.cachedTokens,
      reasoningTokens: protocol === 'messages' ? 0 : record!.reasoningTokens,
    };
    return { shown, billed, text };
  }

  for (const [name, told] of Object.entries(LIES)) {
    for (const protocol of Object.keys(PROTOCOLS) as Array<keyof typeof PROTOCOLS>) {
      for (const stream of [false, true]) {
        it(`${name}: ${protocol}, ${stream ? 'stream' : 'JSON'}`, async () => {
          lie = told;
          const { shown, billed, text } = await shownAndBilled(protocol, stream);
          expect(shown).toEqual(billed);
          // Nothing of the lie reaches the client.
          expect(text).not.toContain('1000000');
          expect(text).not.toContain('-50');
          expect(text).not.toContain('billed_by_engine');
          expect(text).not.toMatch(/"cached_tokens":"/);
        });
      }
    }
  }

  it('an honest engine is relayed as it wrote its usage', async () => {
    lie = { prompt_tokens: 20, total_tokens: 23, completion_tokens: 3 };
    const { shown, billed, text } = await shownAndBilled('chat', false);
    expect(shown).toEqual(billed);
    expect(text).toContain('"usage":{"prompt_tokens":20,"total_tokens":23,"completion_tokens":3}');
  });
});
