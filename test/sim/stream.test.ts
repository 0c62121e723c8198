import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { jsonOf, SIM_WAIT, post, readAll, sseChunks, startTestSim, userSays } from './helpers.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startTestSim();
});
afterAll(() => sim.close());

async function stream(body: Record<string, unknown>): Promise<{ res: Response; chunks: any[]; done: boolean }> {
  const res = await post(sim, '/v1/chat/completions', { model: 'sim-chat', stream: true, ...body });
  return { res, ...sseChunks(await res.text()) };
}

describe('streaming chat', () => {
  it('sends role chunk, one chunk per token, finish on the last token, then [DONE]', async () => {
    const { res, chunks, done } = await stream({ messages: userSays('Hello there!') });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(done).toBe(true);
    expect(chunks).toHaveLength(17);
    const [first, ...tokens] = chunks;
    expect(first).toEqual({
      id: expect.stringMatching(/^chatcmpl-[0-9a-f]{32}$/),
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: 'sim-chat',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
    });
    for (const chunk of chunks) {
      expect(chunk.id).toBe(first.id);
      expect(chunk.created).toBe(first.created);
      expect(chunk.usage).toBeUndefined();
    }
    tokens.forEach((chunk, i) => {
      const last = i === tokens.length - 1;
      expect(chunk.choices).toEqual([
        {
          index: 0,
          delta: { content: expect.stringMatching(i === 0 ? /^\w+$/ : /^ \w+$/) },
          logprobs: null,
          finish_reason: last ? 'stop' : null,
          ...(last ? { stop_reason: null } : {}),
        },
      ]);
    });

    // The same words as the JSON answer to the same prompt.
    const json = await jsonOf(
      post(sim, '/v1/chat/completions', { model: 'sim-chat', messages: userSays('Hello there!') }),
    );
    expect(tokens.map((c) => c.choices[0].delta.content).join('')).toBe(json.choices[0].message.content);
  });

  it('carries finish_reason length on the last token when max_tokens cuts it', async () => {
    const { chunks } = await stream({ messages: userSays('x'), max_tokens: 4 });
    expect(chunks).toHaveLength(5);
    expect(chunks.at(-1).choices[0]).toMatchObject({ finish_reason: 'length', stop_reason: null });
  });

  it('adds a usage chunk with choices [] for include_usage true and for {}', async () => {
    for (const streamOptions of [{ include_usage: true }, {}]) {
      const { chunks, done } = await stream({ messages: userSays('Hello there!'), stream_options: streamOptions });
      expect(done).toBe(true);
      expect(chunks).toHaveLength(18);
      expect(chunks.at(-1)).toEqual({
        id: chunks[0].id,
        object: 'chat.completion.chunk',
        created: chunks[0].created,
        model: 'sim-chat',
        choices: [],
        usage: { prompt_tokens: 9, total_tokens: 25, completion_tokens: 16 },
      });
      expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    }
  });

  it('sends no usage chunk when stream_options is absent or include_usage is false', async () => {
    for (const extra of [{}, { stream_options: { include_usage: false } }, { stream_options: null }]) {
      const { chunks } = await stream({ messages: userSays('x'), ...extra });
      expect(chunks).toHaveLength(17);
      expect(chunks.every((c) => c.choices.length === 1 && c.usage === undefined)).toBe(true);
    }
  });

  it('puts running usage on every chunk with continuous_usage_stats', async () => {
    const { chunks } = await stream({
      messages: userSays('Hello there!'),
      max_tokens: 5,
      stream_options: { include_usage: true, continuous_usage_stats: true },
    });
    expect(chunks).toHaveLength(7);
    chunks.slice(0, 6).forEach((chunk, i) => {
      expect(chunk.usage).toEqual({ prompt_tokens: 9, total_tokens: 9 + i, completion_tokens: i });
    });
    expect(chunks[6]).toMatchObject({ choices: [], usage: { completion_tokens: 5, total_tokens: 14 } });

    const off = await stream({
      messages: userSays('x'),
      stream_options: { include_usage: false, continuous_usage_stats: true },
    });
    expect(off.chunks.every((c) => c.usage === undefined)).toBe(true);
  });

  it('streams reasoning deltas before content deltas and counts both', async () => {
    const { chunks } = await stream({ model: 'sim-think', messages: userSays('Why?'), stream_options: {} });
    const deltas = chunks.slice(1, -1).map((c) => c.choices[0].delta);
    const firstContent = deltas.findIndex((d) => 'content' in d);
    expect(firstContent).toBeGreaterThan(0);
    expect(deltas.slice(0, firstContent).every((d) => typeof d.reasoning === 'string' && !('content' in d))).toBe(true);
    expect(deltas.slice(firstContent).every((d) => typeof d.content === 'string' && !('reasoning' in d))).toBe(true);
    expect(deltas[0].reasoning).toMatch(/^\w+$/);
    expect(deltas[firstContent].content).toMatch(/^\w+$/);
    expect(chunks.at(-1).usage).toMatchObject({
      completion_tokens: deltas.length,
      completion_tokens_details: { reasoning_tokens: firstContent },
    });

    const json = await jsonOf(post(sim, '/v1/chat/completions', { model: 'sim-think', messages: userSays('Why?') }));
    const message = json.choices[0].message;
    expect(
      deltas
        .slice(0, firstContent)
        .map((d) => d.reasoning)
        .join(''),
    ).toBe(message.reasoning);
    expect(
      deltas
        .slice(firstContent)
        .map((d) => d.content)
        .join(''),
    ).toBe(message.content);
  });

  it('writes thousands of tokens without delays', async () => {
    const { chunks, done } = await stream({
      messages: userSays('x'),
      max_tokens: 3000,
      ignore_eos: true,
      stream_options: {},
    });
    expect(done).toBe(true);
    expect(chunks).toHaveLength(3002);
    expect(chunks.at(-1).usage.completion_tokens).toBe(3000);
  });
});

describe('stream timing', () => {
  it('waits ttftMs before the first token and itlMs between tokens', async () => {
    // A first token a second away: headers held for it would be seen as such on a loaded machine.
    const slow = await startTestSim({ ttftMs: 1_000, itlMs: 15 });
    try {
      const started = Date.now();
      const res = await post(slow, '/v1/chat/completions', {
        model: 'sim-chat',
        stream: true,
        messages: userSays('x'),
        max_tokens: 6,
      });
      // Headers arrive before the first token: none generated yet when they are read.
      expect(slow.stats().generationTokens).toBe(0);
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const arrivals: number[] = [];
      for (;;) {
        const { done } = await reader.read();
        if (done) break;
        arrivals.push(Date.now() - started);
      }
      expect(arrivals[0]).toBeGreaterThanOrEqual(995);
      // 5 gaps of 15 ms after the first token.
      expect((arrivals.at(-1) as number) - (arrivals[0] as number)).toBeGreaterThanOrEqual(60);
      expect(arrivals.length).toBeGreaterThanOrEqual(5);
    } finally {
      await slow.close();
    }
  });
});

describe('client disconnect', () => {
  it('stops a stream at once and counts it as aborted', async () => {
    const slow = await startTestSim({ itlMs: 10 });
    try {
      const controller = new AbortController();
      const res = await post(
        slow,
        '/v1/chat/completions',
        { model: 'sim-chat', stream: true, messages: userSays('x'), max_tokens: 1000, ignore_eos: true },
        { signal: controller.signal },
      );
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      await reader.read();
      expect(slow.stats().running).toBe(1);
      controller.abort();
      await vi.waitFor(() => expect(slow.stats()).toMatchObject({ running: 0, aborted: 1, completed: 0 }), SIM_WAIT);
      const generated = slow.stats().generationTokens;
      expect(generated).toBeLessThan(100);
      // Nothing more is generated for it: another request of 6 tokens at 10 ms each runs past where
      // 6 more of the abandoned one would have come, and the count grows by its 6 only.
      const after = await jsonOf(
        post(slow, '/v1/chat/completions', {
          model: 'sim-chat',
          messages: userSays('x'),
          max_tokens: 6,
          ignore_eos: true,
        }),
      );
      expect(after.usage.completion_tokens).toBe(6);
      expect(slow.stats().generationTokens).toBe(generated + 6);
      const metrics = await (await fetch(`${slow.url}/metrics`)).text();
      expect(metrics).toContain(
        'vllm:request_success_total{engine="0",finished_reason="abort",model_name="sim-chat"} 1.0',
      );
    } finally {
      await slow.close();
    }
  });

  it('stops a non-streaming generation too', async () => {
    const slow = await startTestSim({ ttftMs: 20, itlMs: 10 });
    try {
      const controller = new AbortController();
      const pending = post(
        slow,
        '/v1/chat/completions',
        { model: 'sim-chat', messages: userSays('x'), max_tokens: 1000, ignore_eos: true },
        { signal: controller.signal },
      ).catch((error: unknown) => error);
      await vi.waitFor(() => expect(slow.stats().generationTokens).toBeGreaterThan(2), SIM_WAIT);
      controller.abort();
      expect(await pending).toBeInstanceOf(Error);
      await vi.waitFor(() => expect(slow.stats()).toMatchObject({ running: 0, aborted: 1, completed: 0 }), SIM_WAIT);
    } finally {
      await slow.close();
    }
  });

  it('close() ends open streams and resolves', async () => {
    const slow = await startTestSim({ itlMs: 50 });
    const res = await post(slow, '/v1/chat/completions', {
      model: 'sim-chat',
      stream: true,
      messages: userSays('x'),
      max_tokens: 1000,
      ignore_eos: true,
    });
    const reading = readAll(res);
    await vi.waitFor(() => expect(slow.stats().running).toBe(1), SIM_WAIT);
    const started = Date.now();
    await slow.close();
    // Without waiting for the stream: well within a tenth of the 50 s its 1,000 tokens would take.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(slow.stats().generationTokens).toBeLessThan(1_000);
    const { error } = await reading;
    expect(error).toBeTruthy();
    expect(slow.stats().running).toBe(0);
  });
});
