import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { openApiErrors } from '../../helpers/openapi.js';

describe("response shapes against OpenAI's OpenAPI spec", () => {
  let gateway: TestGateway;
  let secret: string;
  const post = (path: string, body: unknown) =>
    fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    gateway = await startTestGateway('pglite');
    ({ secret } = await gateway.tenant());
  });
  afterAll(() => gateway?.close());

  it('chat completion (JSON)', async () => {
    const body = await (
      await post('/chat/completions', { model: 'sim-chat', messages: [{ role: 'user', content: 'hi' }] })
    ).json();
    expect(openApiErrors('CreateChatCompletionResponse', body)).toEqual([]);
  });

  it('chat completion chunks, with and without the usage chunk', async () => {
    const response = await post('/chat/completions', {
      model: 'sim-reasoner',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'hi' }],
    });
    const events = (await response.text()).split('\n\n').filter((e) => e && e !== 'data: [DONE]');
    expect(events.length).toBeGreaterThan(2);
    for (const event of events)
      expect(openApiErrors('CreateChatCompletionStreamResponse', JSON.parse(event.slice(6)))).toEqual([]);
  });

  it('responses (JSON, with a tool call and reasoning) and every event of a Responses stream', async () => {
    const tools = [
      {
        type: 'function',
        name: 'f',
        parameters: { type: 'object', properties: { a: { type: 'string' } } },
        strict: false,
      },
    ];
    const body = await (
      await post('/responses', { model: 'sim-reasoner', input: 'hi', tools, tool_choice: 'required' })
    ).json();
    expect(openApiErrors('Response', body)).toEqual([]);
    const response = await post('/responses', {
      model: 'sim-reasoner',
      input: [{ role: 'user', content: 'hi' }],
      instructions: 'Be brief.',
      stream: true,
    });
    const events = (await response.text()).split('\n\n').filter(Boolean);
    expect(events.length).toBeGreaterThan(8);
    const data = events.map((event) => JSON.parse(event.split('\ndata: ')[1]!) as { type: string });
    // The events the spec does not describe, by type: none.
    expect(
      data.filter((event) => openApiErrors('ResponseStreamEvent', event).length > 0).map((event) => event.type),
    ).toEqual([]);
  });

  it('embeddings (float)', async () => {
    const body = await (
      await post('/embeddings', { model: 'sim-embed', input: ['a', 'b'], encoding_format: 'float' })
    ).json();
    expect(openApiErrors('CreateEmbeddingResponse', body)).toEqual([]);
  });

  it('models list and model', async () => {
    const headers = { authorization: `Bearer ${secret}` };
    const list = await (await fetch(`${gateway.baseURL}/models`, { headers })).json();
    expect(openApiErrors('ListModelsResponse', list)).toEqual([]);
    const model = await (await fetch(`${gateway.baseURL}/models/sim-chat`, { headers })).json();
    expect(openApiErrors('Model', model)).toEqual([]);
  });

  it('errors', async () => {
    const body = (await (await post('/chat/completions', { model: 'nope', messages: [] })).json()) as {
      error: unknown;
    };
    expect(openApiErrors('Error', body.error)).toEqual([]);
  });
});
