import { describe, expect, it } from 'vitest';
import { outputOfEvents } from '../../../src/gateway/requests/responses/background-output.js';
import { ResponsesWriter } from '../../../src/gateway/requests/responses/stream.js';
import { toolNamesOf } from '../../../src/gateway/requests/responses/translate.js';

type Json = Record<string, unknown>;

const TOOLS = [{ type: 'function', name: 'lookup', parameters: { type: 'object' } }];

/** A writer of the Responses stream, and the engine's chunks of reasoning, text and a tool call. */
function streamed(): { writer: ResponsesWriter; events: string[] } {
  const writer = new ResponsesWriter({
    body: { model: 'm', input: 'hi', tools: TOOLS },
    names: toolNamesOf({ tools: TOOLS }),
    id: 'resp_1',
    model: 'm',
  });
  const deltas: Json[] = [
    { reasoning_content: 'Think ' },
    { reasoning_content: 'twice.' },
    { content: 'Hello, ' },
    { content: 'wörld "quoted"' },
    { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'lookup', arguments: '{"q":' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '"x"}' } }] },
  ];
  const events: string[] = [];
  for (const delta of deltas) {
    const out = writer.rewrite(JSON.stringify({ choices: [{ index: 0, delta }] })) ?? '';
    events.push(...eventsOf(out));
  }
  return { writer, events };
}

function eventsOf(text: string): string[] {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((event) => `${event}\n\n`);
}

describe('a background response output from its kept events', () => {
  it('is the output the stream ended with, when it ended', () => {
    const { writer, events } = streamed();
    events.push(...eventsOf(writer.finish()));
    const output = outputOfEvents(events);
    expect(output).toEqual(writer.finalResponse().output);
    expect(output.map((item) => item.type)).toEqual(['reasoning', 'message', 'function_call']);
  });

  it('is each item as far as its deltas went when the stream was cut, the open one incomplete', () => {
    const { events } = streamed();
    // Cut inside the message: after its second delta, before the tool call.
    const cut = events.findLastIndex((event) => event.includes('"response.output_text.delta"'));
    const output = outputOfEvents(events.slice(0, cut + 1));
    expect(output).toHaveLength(2);
    expect(output[0]).toMatchObject({ type: 'reasoning', summary: [{ type: 'summary_text', text: 'Think twice.' }] });
    expect(output[1]).toMatchObject({
      type: 'message',
      role: 'assistant',
      status: 'incomplete',
      content: [{ type: 'output_text', text: 'Hello, wörld "quoted"', annotations: [], logprobs: [] }],
    });
  });

  it('keeps a tool call cut in its arguments as far as they went, incomplete', () => {
    const { events } = streamed();
    const output = outputOfEvents(events);
    expect(output[2]).toMatchObject({
      type: 'function_call',
      status: 'incomplete',
      name: 'lookup',
      arguments: '{"q":"x"}',
    });
    expect(outputOfEvents(events.slice(0, -1))[2]).toMatchObject({ arguments: '{"q":' });
  });

  it('is empty with no event, and skips what is not an event', () => {
    expect(outputOfEvents([])).toEqual([]);
    expect(outputOfEvents(['event: x\ndata: {not json\n\n', ': comment\n\n'])).toEqual([]);
  });
});
