import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chatBodyOf } from '../../../src/gateway/requests/responses/translate.js';
import { keptInputItem, keptResponse } from '../../../src/gateway/stored-responses/kept.js';

type Json = Record<string, unknown>;

const junk = fc.string({ maxLength: 20 });
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.constant(''));
/** A content part of any kind a client sends, with fields the translation does not read. */
const part = fc.oneof(
  fc.record({ type: fc.constantFrom('input_text', 'output_text', 'text', 'summary_text'), text, junk }),
  fc.record({ type: fc.constant('refusal'), refusal: text }),
  fc.record({ type: fc.constant('input_image'), image_url: fc.webUrl(), detail: fc.constantFrom('low', 'x'), junk }),
  fc.record({ type: fc.constant('input_file'), file_data: junk, filename: junk }),
  fc.record({ type: fc.constant('input_audio'), data: junk }),
);
const message = fc.record({
  type: fc.constant('message'),
  id: fc.option(fc.string({ maxLength: 8 }), { nil: undefined }),
  role: fc.constantFrom('user', 'assistant', 'system', 'developer'),
  content: fc.oneof(text, fc.array(part, { maxLength: 4 })),
  junk,
});
const call = fc.record({
  type: fc.constant('function_call'),
  call_id: fc.string({ maxLength: 6 }),
  name: fc.string({ maxLength: 6 }),
  namespace: fc.option(fc.string({ maxLength: 4 }), { nil: undefined }),
  arguments: fc.oneof(text, fc.dictionary(fc.string({ maxLength: 3 }), fc.integer())),
  junk,
});
const custom = fc.record({
  type: fc.constant('custom_tool_call'),
  call_id: fc.string({ maxLength: 6 }),
  name: fc.string({ maxLength: 6 }),
  input: fc.option(text, { nil: undefined }),
  junk,
});
const output = fc.record({
  type: fc.constantFrom('function_call_output', 'custom_tool_call_output'),
  call_id: fc.string({ maxLength: 6 }),
  output: fc.oneof(
    text,
    fc.constant(null),
    fc.dictionary(fc.string({ maxLength: 3 }), fc.integer()),
    fc.array(part, { maxLength: 3 }),
  ),
  junk,
});
const dropped = fc.oneof(
  fc.record({ type: fc.constant('reasoning'), summary: fc.constant([]), encrypted_content: junk }),
  fc.record({ type: fc.constant('item_reference'), id: junk }),
  fc.record({ type: fc.constant('web_search_call'), action: fc.record({ query: junk }) }),
);
const item = fc.oneof(message, call, custom, output, dropped) as fc.Arbitrary<Json>;

describe('what a stored response keeps', () => {
  it('translates to the same chat messages as what the client sent: nothing a later turn sends is lost', () => {
    fc.assert(
      fc.property(fc.array(item, { maxLength: 8 }), (items) => {
        const kept = items.map(keptInputItem).filter((each): each is Json => each !== null);
        const sent = chatBodyOf({ model: 'm', input: [] }, items);
        const fromStore = chatBodyOf({ model: 'm', input: [] }, JSON.parse(JSON.stringify(kept)) as Json[]);
        expect(fromStore).toEqual(sent);
      }),
      { numRuns: 500 },
    );
  });

  it('keeps none of what the translation drops', () => {
    const huge = 'x'.repeat(100_000);
    const items: Json[] = [
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: huge },
      { type: 'message', role: 'user', content: [{ type: 'input_file', file_data: huge }], junk: huge },
      { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}', junk: huge },
    ];
    expect(JSON.stringify(items.map(keptInputItem)).length).toBeLessThan(300);
  });

  it('keeps the request’s echo as OpenAI bounds it, and every field the gateway made as it is', () => {
    const huge = 'x'.repeat(100_000);
    const metadata: Json = { big: huge, [huge]: 'v' };
    for (let i = 0; i < 20; i++) metadata[`k${i}`] = `v${i}`;
    const kept = keptResponse({
      id: 'resp_1',
      status: 'completed',
      output: [{ type: 'message', junk: 'the gateway made it' }],
      usage: { input_tokens: 1 },
      metadata,
      tools: [
        { type: 'web_search', junk: huge },
        { type: 'namespace', name: 'ns', tools: [{ type: 'function', name: 'g', parameters: {}, junk: huge }] },
      ],
      tool_choice: { type: 'allowed_tools', tools: [], junk: huge },
      reasoning: { effort: 'high', summary: huge },
      text: { format: { type: 'json_schema', name: 's', schema: { type: 'object' }, junk: huge }, verbosity: huge },
      temperature: huge,
      user: huge,
    });
    expect(JSON.stringify(kept).length).toBeLessThan(1_000);
    expect(kept).toMatchObject({
      output: [{ type: 'message', junk: 'the gateway made it' }],
      usage: { input_tokens: 1 },
      tools: [
        { type: 'namespace', name: 'ns', tools: [{ type: 'function', name: 'g', parameters: {}, strict: null }] },
      ],
      tool_choice: 'auto',
      reasoning: { effort: 'high', summary: null },
      text: { format: { type: 'json_schema', name: 's', schema: { type: 'object' } } },
      temperature: null,
    });
    expect(Object.keys(kept.metadata as Json)).toHaveLength(16);
  });
});
