import { ChatOpenAI } from '@langchain/openai';
import { describe, expect, it } from 'vitest';
import { useTestGateway } from '../../helpers/gateway.js';

// LangChain's ChatOpenAI on the Responses API (`useResponsesApi: true`) through the real gateway on
// the simulator. Only PGlite: the gateway's side is the route responses.test.ts runs on both
// stores.

const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
};

describe("LangChain's ChatOpenAI with useResponsesApi", () => {
  const t = useTestGateway('pglite');
  const model = () =>
    new ChatOpenAI({
      model: 'sim-chat',
      apiKey: t.secret,
      configuration: { baseURL: t.gateway.baseURL },
      maxRetries: 0,
      useResponsesApi: true,
    });

  it('invokes (with usage metadata) and streams', async () => {
    const message = await model().invoke('Say hello.');
    expect(typeof message.content === 'string' ? message.content : message.text).not.toBe('');
    expect(message.usage_metadata).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
    });
    let streamed = '';
    for await (const chunk of await model().stream('Stream, please.')) streamed += chunk.text;
    expect(streamed.length).toBeGreaterThan(0);
  });

  it('bindTools: the model calls the tool, and takes its result back', async () => {
    const withTools = model().bindTools([weatherTool], { tool_choice: 'get_weather' });
    const call = await withTools.invoke('Weather in Paris?');
    expect(call.tool_calls?.[0]).toMatchObject({ name: 'get_weather', args: { city: expect.any(String) } });
    const answer = await model().invoke([
      { role: 'user', content: 'Weather in Paris?' },
      call,
      { role: 'tool', content: 'Sunny, 21 C', tool_call_id: call.tool_calls![0]!.id! },
    ]);
    expect(answer.text.length).toBeGreaterThan(0);
  });
});
