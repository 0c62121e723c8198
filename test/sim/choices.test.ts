import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { jsonOf, post, sseChunks, startTestSim, userSays } from './helpers.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startTestSim();
});
afterAll(() => sim.close());

describe('n choices, as vLLM answers them', () => {
  it('answers n choices with their index, and usage sums their tokens', async () => {
    const res = await post(sim, '/v1/chat/completions', {
      model: 'sim-chat',
      messages: userSays('Hi'),
      n: 8,
      max_tokens: 5,
    });
    const json = await jsonOf(res);
    expect(res.status).toBe(200);
    expect(json.choices.map((c: any) => c.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    for (const choice of json.choices) expect(choice.finish_reason).toBe('length');
    expect(json.usage.completion_tokens).toBe(40);
    expect(new Set(json.choices.map((c: any) => c.message.content)).size).toBeGreaterThan(1);
  });

  it('keeps the single answer as choice 0', async () => {
    const one = await jsonOf(
      await post(sim, '/v1/chat/completions', { model: 'sim-chat', messages: userSays('Same'), seed: 3 }),
    );
    const many = await jsonOf(
      await post(sim, '/v1/chat/completions', { model: 'sim-chat', messages: userSays('Same'), seed: 3, n: 2 }),
    );
    expect(many.choices[0].message.content).toBe(one.choices[0].message.content);
  });

  it('streams each choice under its index, then one usage chunk summed over choices', async () => {
    const res = await post(sim, '/v1/chat/completions', {
      model: 'sim-think',
      messages: userSays('Hi'),
      n: 3,
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
    });
    const { chunks, done } = sseChunks(await res.text());
    expect(done).toBe(true);
    const usage = chunks.at(-1);
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toMatchObject({ completion_tokens: 18, completion_tokens_details: { reasoning_tokens: 9 } });
    for (const index of [0, 1, 2]) {
      const mine = chunks.slice(0, -1).filter((c) => c.choices[0].index === index);
      expect(mine[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
      expect(mine.filter((c) => c.choices[0].delta.content || c.choices[0].delta.reasoning)).toHaveLength(6);
      expect(mine.at(-1).choices[0].finish_reason).toBe('length');
    }
  });

  it('hostile: refuses an n beyond its bound before generating anything', async () => {
    const res = await post(sim, '/v1/chat/completions', {
      model: 'sim-chat',
      messages: userSays('Hi'),
      n: 1_000_000,
      max_tokens: 4000,
    });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).error).toMatchObject({ param: 'n', message: expect.stringContaining('128') });
    const zero = await post(sim, '/v1/chat/completions', { model: 'sim-chat', messages: userSays('Hi'), n: 0 });
    expect(zero.status).toBe(400);
  });
});
