import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutNullFields } from '../../../src/gateway/proxy/openai-shape.js';
import { readEngineChunks } from '../../../src/gateway/requests/stream-writer.js';
import { StreamedAnswer } from '../../../src/gateway/requests/streamed-answer.js';
import { startSimulator, type RunningSimulator } from '../../../src/sim/index.js';

type Json = Record<string, unknown>;

const USAGE = { include_usage: true, continuous_usage_stats: true };
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string' }, days: { type: 'integer' } },
        required: ['city', 'days'],
      },
    },
  },
];

/**
 * A JSON answer assembled from the engine's stream (`StreamedAnswer`) is the engine's own JSON
 * answer as the gateway shows it (`withoutNullFields`), field for field: the simulator answers the
 * same request both ways, the same tokens each time.
 */
describe('a JSON answer assembled from the engine stream', () => {
  let sim: RunningSimulator;

  beforeAll(async () => {
    sim = await startSimulator({
      models: [
        { name: 'sim-chat', task: 'chat' },
        { name: 'sim-think', task: 'chat', reasoning: true },
      ],
      ttftMs: 0,
      itlMs: 0,
    });
  });
  afterAll(async () => {
    await sim?.close();
  });

  const post = (path: string, body: Json) =>
    fetch(`${sim.url}/v1${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  /** The engine's JSON answer and the one assembled from its stream, as the gateway shows each. */
  async function bothWays(path: string, body: Json) {
    const json = (await (await post(path, body)).json()) as Json;
    const text = await (await post(path, { ...body, stream: true, stream_options: USAGE })).text();
    const assembled = new StreamedAnswer(true);
    const read = readEngineChunks(assembled);
    for (const event of text.split('\n\n')) {
      const data = event.slice('data: '.length);
      if (event.startsWith('data: ') && data !== '[DONE]') read(data);
    }
    // Ids and times are the engine's own each time (a tool call's too): only they may differ.
    const shown = (answer: Json) =>
      JSON.parse(
        JSON.stringify(withoutNullFields({ ...answer, id: 'id', created: 0, model: 'm' })).replace(
          /chatcmpl-tool-[0-9a-f]+/g,
          'tool-id',
        ),
      ) as Json;
    return { json: shown(json), assembled: shown(assembled.answer()), state: assembled.state };
  }

  it.each([
    ['a chat answer', '/chat/completions', { model: 'sim-chat', messages: [{ role: 'user', content: 'Hi there' }] }],
    [
      'n = 3 choices, cut by max_tokens',
      '/chat/completions',
      { model: 'sim-chat', n: 3, max_tokens: 7, messages: [{ role: 'user', content: 'Tell me more' }] },
    ],
    [
      'reasoning before the content',
      '/chat/completions',
      { model: 'sim-think', messages: [{ role: 'user', content: 'Think first' }] },
    ],
    [
      'a tool call with its arguments',
      '/chat/completions',
      {
        model: 'sim-chat',
        tools: TOOLS,
        tool_choice: 'required',
        messages: [{ role: 'user', content: 'Weather in Paris?' }],
      },
    ],
    ['a completion', '/completions', { model: 'sim-chat', prompt: 'Once upon a time', max_tokens: 12 }],
    [
      'completions with logprobs, echo and two choices',
      '/completions',
      { model: 'sim-chat', prompt: 'Once upon', max_tokens: 6, n: 2, logprobs: 2, echo: true },
    ],
  ])('%s', async (_name, path, body) => {
    const { json, assembled, state } = await bothWays(path, body);
    expect(assembled).toEqual(json);
    expect(state.usageFinal).toBe(true);
  });
});
