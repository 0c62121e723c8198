import { describe, expect, it } from 'vitest';
import { oneStore, useTestGateway } from '../../helpers/gateway.js';

const stores = await oneStore();

describe.each(stores)('embeddings through the gateway (%s)', (store) => {
  const t = useTestGateway(store);

  it('embeds a string (the SDK asks for base64 and decodes it)', async () => {
    const result = await t.client.embeddings.create({ model: 'sim-embed', input: 'hello world' });
    expect(result.object).toBe('list');
    expect(result.model).toBe('sim-embed');
    expect(result.data).toHaveLength(1);
    expect(result.data[0]!.embedding.length).toBeGreaterThan(0);
    expect(result.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('gives the same vectors as float and as base64', async () => {
    const asFloat = await t.client.embeddings.create({
      model: 'sim-embed',
      input: ['alpha', 'beta'],
      encoding_format: 'float',
    });
    const asBase64 = await t.client.embeddings.create({ model: 'sim-embed', input: ['alpha', 'beta'] });
    expect(asBase64.data.map((d) => d.embedding)).toEqual(
      asFloat.data.map((d) => Array.from(new Float32Array(d.embedding))),
    );
  });

  it('relays base64 as base64 when the client asks for it raw', async () => {
    const { secret } = await t.gateway.tenant();
    const response = await fetch(`${t.gateway.baseURL}/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-embed', input: 'hello', encoding_format: 'base64' }),
    });
    const body = (await response.json()) as { data: Array<{ embedding: unknown }> };
    expect(typeof body.data[0]!.embedding).toBe('string');
  });

  it('returns results in input order, deterministic in the input', async () => {
    const inputs = ['one', 'two', 'three', 'four'];
    const all = await t.client.embeddings.create({ model: 'sim-embed', input: inputs, encoding_format: 'float' });
    expect(all.data.map((d) => d.index)).toEqual([0, 1, 2, 3]);
    for (const [index, input] of inputs.entries()) {
      const single = await t.client.embeddings.create({ model: 'sim-embed', input, encoding_format: 'float' });
      expect(single.data[0]!.embedding).toEqual(all.data[index]!.embedding);
    }
  });

  it('accepts the model by its Hugging Face repo id', async () => {
    const result = await t.client.embeddings.create({ model: 'tollgate-test/Sim-Embed', input: 'x' });
    expect(result.model).toBe('tollgate-test/Sim-Embed');
  });
});
