import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSimulator } from '../../src/sim/index.js';
import { jsonOf, post, sseChunks, startTestSim, userSays } from './helpers.js';

let sim: RunningSimulator;
beforeAll(async () => {
  sim = await startTestSim({
    models: [
      { name: 'sim-chat', task: 'chat' },
      { name: 'sim-think', task: 'chat', reasoning: true },
      { name: 'sim-plain', task: 'chat', toolCallParser: null },
    ],
  });
});
afterAll(() => sim.close());

const weather = {
  type: 'object',
  properties: {
    city: { type: 'string', minLength: 3 },
    unit: { enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
    when: { type: 'string', format: 'date' },
    stops: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, at: { type: 'number', exclusiveMinimum: 0 } },
        required: ['name', 'at'],
        additionalProperties: false,
      },
      minItems: 2,
    },
    note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
  },
  required: ['city', 'unit', 'days', 'stops'],
  additionalProperties: false,
};
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: weather } },
  // What Codex sends beside its functions: skipped, not refused.
  { type: 'web_search' },
  { type: 'namespace', name: 'mcp', tools: [] },
];
const ajv = new Ajv({ strict: false });
const validWeather = ajv.compile(weather);

async function chat(body: Record<string, unknown>): Promise<{ status: number; json: any }> {
  const res = await post(sim, '/v1/chat/completions', {
    model: 'sim-chat',
    messages: userSays('Weather in Paris?'),
    ...body,
  });
  return { status: res.status, json: await jsonOf(res) };
}

describe('tool calls, as vLLM tool parsers return them', () => {
  it('auto: calls a tool after a user message, with arguments valid against its schema', async () => {
    const { status, json } = await chat({ tools });
    expect(status).toBe(200);
    const [choice] = json.choices;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const call = choice.message.tool_calls[0];
    expect(call).toMatchObject({
      id: expect.stringMatching(/^chatcmpl-tool-[0-9a-f]{32}$/),
      type: 'function',
      function: { name: 'get_weather' },
    });
    expect(validWeather(JSON.parse(call.function.arguments))).toBe(true);
  });

  it('auto: answers in text once the last message is a tool result', async () => {
    const messages = [
      ...userSays('Weather?'),
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'a', type: 'function', function: { name: 'get_weather', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'a', content: 'Sunny' },
    ];
    const { json } = await chat({ tools, messages });
    expect(json.choices[0]).toMatchObject({
      finish_reason: 'stop',
      message: { tool_calls: [], content: expect.any(String) },
    });
  });

  it('required calls a tool even after a tool result; none never does', async () => {
    const messages = [...userSays('Weather?'), { role: 'tool', tool_call_id: 'a', content: 'Sunny' }];
    const required = await chat({ tools, messages, tool_choice: 'required' });
    expect(required.json.choices[0].finish_reason).toBe('tool_calls');
    const none = await chat({ tools, tool_choice: 'none' });
    expect(none.json.choices[0].message.tool_calls).toEqual([]);
  });

  it('a named function is forced (structured output): finish_reason stop, as vLLM gives it', async () => {
    const { json } = await chat({ tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
    expect(json.choices[0].finish_reason).toBe('stop');
    expect(json.choices[0].message.tool_calls[0].function.name).toBe('get_weather');
  });

  it('streams the call as tool_calls deltas: index, id, type and name, then argument fragments', async () => {
    const res = await post(sim, '/v1/chat/completions', {
      model: 'sim-think',
      messages: userSays('Go'),
      tools,
      stream: true,
      n: 2,
    });
    const { chunks, done } = sseChunks(await res.text());
    expect(done).toBe(true);
    for (const index of [0, 1]) {
      const deltas = chunks.filter((c) => c.choices[0]?.index === index).map((c) => c.choices[0]);
      const calls = deltas.flatMap((d) => d.delta.tool_calls ?? []);
      expect(calls[0]).toMatchObject({
        index: 0,
        id: expect.stringMatching(/^chatcmpl-tool-/),
        type: 'function',
        function: { name: 'get_weather', arguments: '' },
      });
      const args = calls
        .slice(1)
        .map((c: any) => c.function.arguments)
        .join('');
      expect(validWeather(JSON.parse(args))).toBe(true);
      // Reasoning comes first, then the call; the last delta says why it ended.
      expect(deltas.findIndex((d) => d.delta.reasoning)).toBeLessThan(deltas.findIndex((d) => d.delta.tool_calls));
      expect(deltas.at(-1).finish_reason).toBe('tool_calls');
    }
  });

  it('cuts the arguments at max_tokens and says length', async () => {
    const { json } = await chat({ tools, max_tokens: 5 });
    expect(json.choices[0].finish_reason).toBe('length');
    expect(() => JSON.parse(json.choices[0].message.tool_calls[0].function.arguments)).toThrow();
    expect(json.usage.completion_tokens).toBe(5);
  });

  it('refuses what vLLM refuses: auto without a tool parser, a named tool not offered, a choice without tools', async () => {
    const plain = await post(sim, '/v1/chat/completions', { model: 'sim-plain', messages: userSays('Hi'), tools });
    expect((await jsonOf(plain)).error.message).toContain('--enable-auto-tool-choice');
    const missing = await chat({ tools, tool_choice: { type: 'function', function: { name: 'nope' } } });
    expect(missing.status).toBe(400);
    const without = await chat({ tool_choice: 'required' });
    expect(without.status).toBe(400);
    // Forced and required still work without the parser: they are structured output.
    const forced = await post(sim, '/v1/chat/completions', {
      model: 'sim-plain',
      messages: userSays('Hi'),
      tools,
      tool_choice: 'required',
    });
    expect((await jsonOf(forced)).choices[0].finish_reason).toBe('tool_calls');
  });
});

describe('response_format', () => {
  it('json_object answers JSON text; json_schema answers a value valid against the schema', async () => {
    const object = await chat({ response_format: { type: 'json_object' } });
    expect(typeof JSON.parse(object.json.choices[0].message.content)).toBe('object');
    const schema = await chat({
      n: 3,
      response_format: { type: 'json_schema', json_schema: { name: 'w', schema: weather, strict: true } },
    });
    for (const choice of schema.json.choices) expect(validWeather(JSON.parse(choice.message.content))).toBe(true);
  });

  it('include_reasoning false hides the reasoning but still counts it', async () => {
    const res = await post(sim, '/v1/chat/completions', {
      model: 'sim-think',
      messages: userSays('Hi'),
      include_reasoning: false,
      stream: true,
      stream_options: {},
    });
    const { chunks } = sseChunks(await res.text());
    expect(chunks.some((c) => c.choices[0]?.delta?.reasoning)).toBe(false);
    expect(chunks.at(-1).usage.completion_tokens_details.reasoning_tokens).toBe(4);
  });
});

describe('hostile schemas', () => {
  it('answers quickly and within bounds whatever the schema asks for', async () => {
    const hostile = {
      $defs: {
        node: {
          type: 'object',
          properties: { a: { $ref: '#/$defs/node' }, b: { $ref: '#/$defs/node' }, c: { $ref: '#/$defs/node' } },
          required: ['a', 'b', 'c'],
        },
      },
      type: 'object',
      properties: {
        tree: { $ref: '#/$defs/node' },
        huge: { type: 'array', items: { type: 'string', minLength: 1_000_000_000 }, minItems: 1_000_000_000 },
        loop: { $ref: '#' },
      },
    };
    const started = Date.now();
    const { status, json } = await chat({
      tools: [{ type: 'function', function: { name: 'evil', parameters: hostile } }],
      tool_choice: 'required',
    });
    expect(status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(json.choices[0].message.tool_calls[0].function.arguments.length).toBeLessThan(200_000);
  });
});
