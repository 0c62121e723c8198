import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { startTestSim } from './helpers.js';

let sim: RunningSimulator;
let client: OpenAI;
beforeAll(async () => {
  sim = await startTestSim();
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

describe('the openai SDK against the simulator', () => {
  it('completes a chat', async () => {
    const completion = await client.chat.completions.create({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(completion.choices[0]?.message.content?.split(' ')).toHaveLength(16);
    expect(completion.usage?.completion_tokens).toBe(16);
  });

  it('streams a chat with usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text.split(' ')).toHaveLength(16);
    expect(usage).toMatchObject({ completion_tokens: 16 });
  });

  it('maps errors to the SDK error classes', async () => {
    await expect(client.chat.completions.create({ model: 'nope', messages: [] })).rejects.toBeInstanceOf(
      OpenAI.NotFoundError,
    );
    await expect(
      client.chat.completions.create({ model: 'sim-chat', messages: [] }, { headers: { 'x-sim-fail': '500' } }),
    ).rejects.toBeInstanceOf(OpenAI.InternalServerError);
  });

  it('throws on a mid-stream error event', async () => {
    const stream = await client.chat.completions.create(
      { model: 'sim-chat', messages: [{ role: 'user', content: 'Hi' }], stream: true },
      { headers: { 'x-sim-fail': 'midstream' } },
    );
    const read = async (): Promise<void> => {
      for await (const _chunk of stream) {
        // drain
      }
    };
    await expect(read()).rejects.toBeInstanceOf(OpenAI.APIError);
  });
});
