import { describe, expect, it } from 'vitest';
import { messageOf } from '../../../src/gateway/requests/messages/answer.js';
import { createMessagesWriter } from '../../../src/gateway/requests/messages/stream.js';
import { chatBodyOf, messagesRequestErrors } from '../../../src/gateway/requests/messages/translate.js';
import { loadConfig } from '../../../src/config/index.js';

/** The default shape bounds (TOLLGATE_TRANSLATION_*). */
const BOUNDS = loadConfig({}).translation;

describe('Messages to chat completions', () => {
  it('translates system, content blocks, tool turns and tool_choice, dropping what the engine cannot run', () => {
    const chat = chatBodyOf({
      model: 'm',
      max_tokens: 100,
      system: [{ type: 'text', text: 'Be brief.' }],
      stop_sequences: ['END'],
      thinking: { type: 'adaptive' },
      tools: [
        { name: 'read', description: 'reads', input_schema: { type: 'object' } },
        { type: 'web_search_20250305', name: 'web_search' },
      ],
      tool_choice: { type: 'tool', name: 'read', disable_parallel_tool_use: true },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAA' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hm', signature: 's' },
            { type: 'text', text: 'Reading.' },
            { type: 'tool_use', id: 't1', name: 'read', input: { p: 1 } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'data' }], is_error: true },
          ],
        },
      ],
      stream: true,
    });
    expect(chat).toEqual({
      model: 'm',
      max_tokens: 100,
      stop: ['END'],
      stream: true,
      tools: [{ type: 'function', function: { name: 'read', description: 'reads', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'read' } },
      parallel_tool_calls: false,
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAA' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Reading.',
          tool_calls: [{ id: 't1', type: 'function', function: { name: 'read', arguments: '{"p":1}' } }],
        },
        { role: 'tool', tool_call_id: 't1', content: 'Error: data' },
      ],
    });
    const withSystemTurn = chatBodyOf({
      model: 'm',
      max_tokens: 1,
      system: 'A.',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'system', content: 'B.' },
      ],
    });
    expect(withSystemTurn.messages).toEqual([
      { role: 'system', content: 'A.\n\nB.' },
      { role: 'user', content: 'hi' },
    ]);
    expect(
      chatBodyOf({
        model: 'm',
        max_tokens: 1,
        messages: [],
        tools: [{ name: 'a', input_schema: {} }],
        tool_choice: { type: 'any' },
      }).tool_choice,
    ).toBe('required');
  });

  it('refuses what it cannot translate, each field named', () => {
    const details = messagesRequestErrors(
      { max_tokens: '5', messages: [{ role: 'tool', content: 7 }], stream: 'yes' },
      BOUNDS,
    );
    expect(details.map((d) => d.field)).toEqual(['max_tokens', 'messages[0].role', 'messages[0].content', 'stream']);
  });

  it("writes the engine's answer as a message: thinking, text, tool_use, stop reason, usage", () => {
    const answer = {
      choices: [
        {
          message: {
            reasoning_content: 'why',
            content: 'Calling.',
            tool_calls: [{ id: 'c1', function: { name: 'read', arguments: '{"p":"a"}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 7 },
    };
    expect(messageOf(answer, 'client-name')).toMatchObject({
      type: 'message',
      model: 'client-name',
      content: [
        { type: 'thinking', thinking: 'why' },
        { type: 'text', text: 'Calling.' },
        { type: 'tool_use', id: 'c1', name: 'read', input: { p: 'a' } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 12, output_tokens: 7 },
    });
  });

  it("streams tool calls as tool_use blocks with input_json_delta, and ends with the engine's usage", () => {
    const writer = createMessagesWriter('m');
    const chunk = (delta: object, finish: string | null = null, usage = { prompt_tokens: 9, completion_tokens: 1 }) =>
      JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }], usage });
    let out = writer.rewrite(chunk({ content: 'Hi' })) ?? '';
    out +=
      writer.rewrite(
        chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'read', arguments: '' } }] }),
      ) ?? '';
    out += writer.rewrite(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"p":' } }] })) ?? '';
    out += writer.rewrite(chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }, 'tool_calls')) ?? '';
    out += writer.rewrite(JSON.stringify({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 4 } })) ?? '';
    out += writer.finish();
    const events = out
      .trim()
      .split('\n\n')
      .map((e) => JSON.parse(e.split('\n')[1]!.slice(6)) as Record<string, unknown>);
    expect(events.map((e) => e.type)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[5]).toMatchObject({ index: 1, content_block: { type: 'tool_use', id: 'c1', name: 'read' } });
    expect(events[7]).toMatchObject({ delta: { type: 'input_json_delta', partial_json: '1}' } });
    expect(events[9]).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 4 } });
    expect(writer.state.usage).toEqual({ promptTokens: 9, completionTokens: 4 });
  });

  it("writes vLLM's usual chunks as the general path would, byte for byte, usage and token count included", () => {
    /**
     * vLLM's usual chunk as it writes it; with a second key in front of the delta, the same chunk
     * the fast path skips.
     */
    const usual = (key: string, text: string, completion: number, unusual = false) =>
      `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,` +
      `"delta":{${unusual ? '"role":"assistant",' : ''}"${key}":${JSON.stringify(text)}},"logprobs":null,` +
      `"finish_reason":null}],"usage":{"prompt_tokens":9,"total_tokens":${9 + completion},"completion_tokens":${completion}}}`;
    const chunks = (unusual: boolean) => [
      usual('reasoning_content', 'hm', 1, unusual),
      usual('reasoning_content', ' "quoted" \\ ☃', 2, unusual),
      usual('content', 'Hi', 3, unusual),
      usual('content', '', 3, unusual),
      usual('content', ' there\n', 4, unusual),
      usual('reasoning', 'again', 5, unusual),
    ];
    const run = (unusual: boolean) => {
      const writer = createMessagesWriter('m');
      const out = chunks(unusual).map((chunk) => writer.rewrite(chunk));
      const { firstTokenAt, ...state } = writer.state;
      expect(firstTokenAt).toBeGreaterThan(0);
      // message ids are random: compared apart
      return { out: out.map((text) => text?.replace(/msg_[0-9a-zA-Z]+/, 'msg_')), state };
    };
    const general = run(true);
    const fast = run(false);
    expect(fast).toEqual(general);
    expect(fast.state).toMatchObject({ tokenChunks: 5, usage: { promptTokens: 9, completionTokens: 5 } });
  });
});
