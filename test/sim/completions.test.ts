import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { jsonOf, post, sseChunks, startTestSim } from './helpers.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startTestSim();
});
afterAll(() => sim.close());

async function complete(body: Record<string, unknown>): Promise<{ status: number; json: any }> {
  const res = await post(sim, '/v1/completions', { model: 'sim-chat', ...body });
  return { status: res.status, json: await jsonOf(res) };
}

describe('POST /v1/completions, as vLLM serves it', () => {
  it('answers a text_completion; a list of prompts gets a choice per prompt and n', async () => {
    const { status, json } = await complete({ prompt: ['Once upon a time', 'def add(a, b):'], n: 2, max_tokens: 5 });
    expect(status).toBe(200);
    expect(json).toMatchObject({ id: expect.stringMatching(/^cmpl-/), object: 'text_completion', model: 'sim-chat' });
    expect(json.choices.map((c: any) => c.index)).toEqual([0, 1, 2, 3]);
    expect(json.choices[0]).toMatchObject({ finish_reason: 'length', stop_reason: null, logprobs: null });
    // 4 + 8 prompt tokens (no chat template), 4 choices of 5.
    expect(json.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 20, total_tokens: 32 });
  });

  it('echoes the prompt and gives logprobs: tokens, token_logprobs, top_logprobs, text_offset', async () => {
    const { json } = await complete({ prompt: 'Hello world', echo: true, logprobs: 2, max_tokens: 3 });
    const [choice] = json.choices;
    expect(choice.text.startsWith('Hello world ')).toBe(true);
    const lp = choice.logprobs;
    expect(lp.tokens).toEqual(['Hello', 'world', ...lp.tokens.slice(2)]);
    expect(lp.tokens).toHaveLength(5);
    expect(lp.token_logprobs[0]).toBeNull();
    expect(lp.top_logprobs[0]).toBeNull();
    expect(Object.keys(lp.top_logprobs[2]).length).toBeGreaterThanOrEqual(2);
    expect(lp.text_offset).toEqual([0, 6, 11, expect.any(Number), expect.any(Number)]);
    for (const value of lp.token_logprobs.slice(1)) expect(value).toBeLessThanOrEqual(0);
  });

  it('stops at a stop string, which is not in the text', async () => {
    const free = await complete({ prompt: 'abc', max_tokens: 12, seed: 1 });
    const words = free.json.choices[0].text.trim().split(' ');
    const { json } = await complete({ prompt: 'abc', max_tokens: 12, seed: 1, stop: [` ${words[3]}`] });
    expect(json.choices[0]).toMatchObject({ finish_reason: 'stop', stop_reason: ` ${words[3]}` });
    expect(json.choices[0].text).not.toContain(` ${words[3]}`);
  });

  it('streams text chunks per choice, then a usage chunk', async () => {
    const res = await post(sim, '/v1/completions', {
      model: 'sim-chat',
      prompt: 'Hi',
      n: 2,
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
      logprobs: 1,
    });
    const { chunks, done } = sseChunks(await res.text());
    expect(done).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 8 } });
    const first = chunks.filter((c) => c.choices[0]?.index === 0);
    expect(first).toHaveLength(4);
    expect(first[0].choices[0].logprobs.tokens).toHaveLength(1);
    expect(first.at(-1).choices[0].finish_reason).toBe('length');
  });

  it('refuses suffix, best_of above 1 and logprobs above 20, as vLLM does', async () => {
    expect((await complete({ prompt: 'a', suffix: 'b' })).json.error).toMatchObject({
      message: 'suffix is not currently supported',
      code: 400,
    });
    expect((await complete({ prompt: 'a', best_of: 3 })).status).toBe(400);
    expect((await complete({ prompt: 'a', logprobs: 21 })).status).toBe(400);
    expect((await complete({})).status).toBe(400);
  });

  it('hostile: refuses more prompts times n than its bound on choices, at once', async () => {
    const before = sim.stats();
    const { status, json } = await complete({
      prompt: Array.from({ length: 20_000 }, (_, i) => `prompt ${i}`),
      n: 128,
      max_tokens: 200,
    });
    expect(status).toBe(400);
    expect(json.error.message).toContain('at most 128');
    // At once: refused before any of it is admitted, counted rather than timed.
    const after = sim.stats();
    expect({ prompt: after.promptTokens, generated: after.generationTokens }).toEqual({
      prompt: before.promptTokens,
      generated: before.generationTokens,
    });
  });
});
