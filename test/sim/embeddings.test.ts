import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { jsonOf, post, startTestSim } from './helpers.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startTestSim();
});
afterAll(() => sim.close());

async function embed(body: Record<string, unknown>): Promise<{ status: number; json: any }> {
  const res = await post(sim, '/v1/embeddings', { model: 'sim-embed', ...body });
  return { status: res.status, json: await jsonOf(res) };
}

function decodeBase64(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  const out: number[] = [];
  for (let i = 0; i < bytes.length; i += 4) out.push(bytes.readFloatLE(i));
  return out;
}

const norm = (v: number[]): number => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));

describe('POST /v1/embeddings', () => {
  it('answers in vLLM shape with a unit vector', async () => {
    const { status, json } = await embed({ input: 'Hello world' });
    expect(status).toBe(200);
    expect(json).toEqual({
      id: expect.stringMatching(/^embd-[0-9a-f]{32}$/),
      object: 'list',
      created: expect.any(Number),
      model: 'sim-embed',
      data: [{ index: 0, object: 'embedding', embedding: expect.any(Array) }],
      usage: { prompt_tokens: 2, total_tokens: 2, completion_tokens: 0, prompt_tokens_details: null },
    });
    expect(json.data[0].embedding).toHaveLength(64);
    expect(norm(json.data[0].embedding)).toBeCloseTo(1, 5);
  });

  it('keeps input order and gives the same input the same vector', async () => {
    const { json } = await embed({ input: ['alpha', 'beta', 'alpha'] });
    expect(json.data.map((d: any) => d.index)).toEqual([0, 1, 2]);
    expect(json.data[0].embedding).toEqual(json.data[2].embedding);
    expect(json.data[0].embedding).not.toEqual(json.data[1].embedding);
    const again = await embed({ input: 'beta' });
    expect(again.json.data[0].embedding).toEqual(json.data[1].embedding);
  });

  it('accepts token ids, one list or several', async () => {
    const one = await embed({ input: [1, 2, 3] });
    expect(one.json.data).toHaveLength(1);
    expect(one.json.usage.prompt_tokens).toBe(3);
    const many = await embed({
      input: [
        [1, 2, 3],
        [4, 5],
      ],
    });
    expect(many.json.data).toHaveLength(2);
    expect(many.json.usage.prompt_tokens).toBe(5);
    expect(many.json.data[0].embedding).toEqual(one.json.data[0].embedding);
  });

  it('encodes base64 as little-endian float32 equal to the float answer', async () => {
    const float = await embed({ input: ['a', 'b'], encoding_format: 'float' });
    const b64 = await embed({ input: ['a', 'b'], encoding_format: 'base64' });
    expect(typeof b64.json.data[0].embedding).toBe('string');
    expect(decodeBase64(b64.json.data[0].embedding)).toEqual(float.json.data[0].embedding);
    expect(decodeBase64(b64.json.data[1].embedding)).toEqual(float.json.data[1].embedding);
  });

  it('decodes equal through the openai SDK (which asks for base64)', async () => {
    const client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const viaSdk = await client.embeddings.create({ model: 'sim-embed', input: 'Hello world' });
    const float = await embed({ input: 'Hello world' });
    expect(viaSdk.data[0]?.embedding).toEqual(float.json.data[0].embedding);
  });

  it('honours smaller dimensions with a unit vector', async () => {
    const { json } = await embed({ input: 'x', dimensions: 8 });
    expect(json.data[0].embedding).toHaveLength(8);
    expect(norm(json.data[0].embedding)).toBeCloseTo(1, 5);
    expect((await embed({ input: 'x', dimensions: 65 })).status).toBe(400);
  });

  it('answers errors like vLLM', async () => {
    const chatModel = await embed({ model: 'sim-chat', input: 'x' });
    expect(chatModel.status).toBe(400);
    expect(chatModel.json.error).toMatchObject({
      message: 'The model does not support Embeddings API',
      type: 'BadRequestError',
    });
    const unknown = await embed({ model: 'nope', input: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatchObject({ type: 'NotFoundError', param: 'model' });
    const missing = await post(sim, '/v1/embeddings', { model: 'sim-embed' });
    expect(missing.status).toBe(400);
    expect((await jsonOf(missing)).error.param).toBe('body.input');
    const tooLong = await embed({ input: 'w '.repeat(4097) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.json.error.param).toBe('input_tokens');
    expect((await embed({ input: 'x', encoding_format: 'int8' })).status).toBe(400);
  });
});
