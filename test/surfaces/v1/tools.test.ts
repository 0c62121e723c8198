import { ChatOpenAI } from '@langchain/openai';
import { Ajv } from 'ajv';
import { zodResponseFormat } from 'openai/helpers/zod';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestGateway } from '../../helpers/gateway.js';

// Tool calling and structured output through the real gateway on the
// simulator, with the clients agents use. Only PGlite: the gateway's side is
// the same chat route the other suites run on both stores.

const weatherSchema = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    days: { type: 'integer', minimum: 1, maximum: 7 },
  },
  required: ['city', 'unit'],
  additionalProperties: false,
};
const weatherTool = {
  type: 'function' as const,
  function: { name: 'get_weather', description: 'The weather in a city', parameters: weatherSchema },
};
const validWeather = new Ajv({ strict: false }).compile(weatherSchema);

describe('tool calls and structured output through the gateway', () => {
  const t = useTestGateway('pglite');

  it('openai: a forced tool_choice returns a tool call with valid arguments', async () => {
    const completion = await t.client.chat.completions.create({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const call = completion.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && call.function.name).toBe('get_weather');
    expect(call.type === 'function' && validWeather(JSON.parse(call.function.arguments))).toBe(true);
  });

  it('openai: streamed tool_calls deltas reassemble into valid JSON (the SDK stream helper)', async () => {
    const stream = t.client.chat.completions.stream({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools: [weatherTool],
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.finish_reason).toBe('tool_calls');
    const call = final.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && validWeather(JSON.parse(call.function.arguments))).toBe(true);
  });

  it('openai: chat.completions.parse() with a zod schema', async () => {
    const Event = z.object({
      name: z.string(),
      attendees: z.array(z.string()),
      day: z.number().int(),
      online: z.boolean().nullable(),
    });
    const completion = await t.client.chat.completions.parse({
      model: 'sim-chat',
      messages: [{ role: 'user', content: 'Plan it' }],
      response_format: zodResponseFormat(Event, 'event'),
    });
    const parsed = completion.choices[0]!.message.parsed;
    expect(Event.safeParse(parsed).success).toBe(true);
  });

  it('n: 8, max_tokens: 50 returns 8 choices', async () => {
    const completion = await t.client.chat.completions.create({
      model: 'sim-chat',
      n: 8,
      max_tokens: 50,
      messages: [{ role: 'user', content: 'Eight ways' }],
    });
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it("an agent's request: max_tokens 32000 beside ~63 KB of tools, and tool types beyond function", async () => {
    const tools = Array.from({ length: 60 }, (_, i) => ({
      type: 'function' as const,
      function: {
        name: `tool_${i}`,
        description: 'x'.repeat(700),
        parameters: {
          type: 'object',
          properties: { path: { type: 'string', description: 'y'.repeat(200) } },
          required: ['path'],
        },
      },
    }));
    const body = {
      model: 'sim-reasoner',
      max_tokens: 32000,
      messages: [{ role: 'user', content: 'Fix the bug' }],
      tools: [...tools, { type: 'web_search' }, { type: 'namespace', name: 'mcp__x', tools: [] }],
    };
    expect(JSON.stringify(body.tools).length).toBeGreaterThan(60_000);
    const res = await fetch(`${t.gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as {
      choices: Array<{ finish_reason: string; message: { tool_calls: unknown[]; reasoning: string } }>;
    };
    expect(res.status).toBe(200);
    expect(json.choices[0]!.finish_reason).toBe('tool_calls');
    expect(json.choices[0]!.message.reasoning).toEqual(expect.any(String));
  });

  it("LangChain's ChatOpenAI: bindTools calls the tool, withStructuredOutput returns the object", async () => {
    const model = new ChatOpenAI({
      model: 'sim-chat',
      apiKey: t.secret,
      configuration: { baseURL: t.gateway.baseURL },
      maxRetries: 0,
    });
    const withTools = model.bindTools([weatherTool]);
    const message = await withTools.invoke('Weather in Paris?');
    expect(message.tool_calls?.[0]).toMatchObject({ name: 'get_weather' });
    expect(validWeather(message.tool_calls?.[0]?.args)).toBe(true);
    const Person = z.object({ name: z.string(), age: z.number().int() });
    const person = await model.withStructuredOutput(Person).invoke('Who?');
    expect(Person.safeParse(person).success).toBe(true);
  });
});
