import { describe, expect, it } from 'vitest';
import { oneStore, useTestGateway } from '../../helpers/gateway.js';

const stores = await oneStore();

describe.each(stores)('chat completions through the gateway (%s)', (store) => {
  const t = useTestGateway(store);

  it('answers JSON with the model named as the client named it, and usage', async () => {
    const completion = await t.client.chat.completions.create({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('sim-chat');
    expect(completion.choices[0]!.message.role).toBe('assistant');
    expect(completion.choices[0]!.message.content).toMatch(/\w+/);
    expect(['stop', 'length']).toContain(completion.choices[0]!.finish_reason);
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(0);
    expect(completion.usage!.total_tokens).toBe(completion.usage!.prompt_tokens + completion.usage!.completion_tokens);
  });

  it.each([
    ['display name', 'Sim Chat'],
    ['Hugging Face repo id', 'tollgate-test/Sim-Chat-1B'],
  ])('resolves the model by its %s and echoes that name', async (_, name) => {
    const completion = await t.client.chat.completions.create({
      model: name,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(completion.model).toBe(name);
  });

  it('cuts at max_tokens with finish_reason length', async () => {
    const completion = await t.client.chat.completions.create({
      model: 'sim-chat',
      max_tokens: 3,
      messages: [{ role: 'user', content: 'tell me more' }],
    });
    expect(completion.choices[0]!.finish_reason).toBe('length');
    expect(completion.usage!.completion_tokens).toBe(3);
  });

  it('streams chunks ending in [DONE] without a usage chunk unless asked', async () => {
    const stream = await t.client.chat.completions.create({
      model: 'sim-chat',
      stream: true,
      messages: [{ role: 'user', content: 'stream please' }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.model).toBe('sim-chat');
      expect(chunk.choices.length).toBeGreaterThan(0);
      expect(chunk.usage ?? undefined).toBeUndefined();
    }
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.at(-1)!.choices[0]!.finish_reason).not.toBeNull();
  });

  it('passes the final usage chunk when include_usage is true', async () => {
    const stream = await t.client.chat.completions.create({
      model: 'sim-chat',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'count my tokens' }],
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBeGreaterThan(0);
    const content = chunks.flatMap((c) => c.choices.map((choice) => choice.delta.content ?? '')).join('');
    expect(content.length).toBeGreaterThan(0);
    // Only the last chunk carries usage: the gateway's running counts are not shown.
    expect(chunks.slice(0, -1).every((c) => c.usage == null)).toBe(true);
  });

  it('relays reasoning deltas from a reasoning model', async () => {
    const stream = await t.client.chat.completions.create({
      model: 'sim-reasoner',
      stream: true,
      messages: [{ role: 'user', content: 'think first' }],
    });
    let reasoning = '';
    let content = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as
        { reasoning?: string; reasoning_content?: string; content?: string } | undefined;
      reasoning += delta?.reasoning ?? delta?.reasoning_content ?? '';
      content += delta?.content ?? '';
    }
    expect(reasoning.length).toBeGreaterThan(0);
    expect(content.length).toBeGreaterThan(0);
  });

  it('relays the raw SSE framing: data lines and a final data: [DONE]', async () => {
    const { secret } = await t.gateway.tenant();
    const response = await fetch(`${t.gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-chat', stream: true, messages: [{ role: 'user', content: 'raw' }] }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await response.text();
    const events = text.split('\n\n').filter(Boolean);
    expect(events.every((e) => e.startsWith('data: '))).toBe(true);
    expect(events.at(-1)).toBe('data: [DONE]');
  });
});
