import { describe, expect, it } from 'vitest';
import { streamSettlement, type StreamState } from '../../../src/gateway/billing/settlement.js';
import { createChatChunkRewriter } from '../../../src/gateway/requests/chat-stream.js';
import { createMessagesWriter } from '../../../src/gateway/requests/messages/stream.js';
import { ResponsesWriter } from '../../../src/gateway/requests/responses/stream.js';
import { toolNamesOf } from '../../../src/gateway/requests/responses/translate.js';

const chunk = (delta: object, finish: string | null = null) =>
  JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] });
const args = (text: string) => chunk({ tool_calls: [{ index: 0, function: { arguments: text } }] });

/**
 * An engine stream with no usage at all (billed from its token chunks), and whether each chunk
 * carries tokens.
 */
const STREAM: Array<[string, boolean]> = [
  [chunk({ role: 'assistant', content: '' }), false],
  [chunk({ content: 'Patching.' }), true],
  [chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'apply_patch' } }] }), true],
  [args('*** Begin Patch\n'), true],
  [args('*** Update File: a.ts\n'), true],
  [args('*** End Patch'), true],
  [chunk({ content: '' }, 'tool_calls'), false],
];

/** Each protocol's stream of the same engine chunks: its rewrite, and the state its relay keeps. */
function writers(): Record<string, { rewrite: (data: string) => string | null; state: StreamState }> {
  const body = { model: 'm', input: 'hi', tools: [{ type: 'custom', name: 'apply_patch' }] };
  return {
    chat: createChatChunkRewriter({ clientModel: 'm', includeUsage: false, continuousUsage: false }),
    messages: createMessagesWriter('m'),
    responses: new ResponsesWriter({ body, names: toolNamesOf(body), id: 'resp_1', model: 'm' }),
  };
}

describe('the billed-chunk rule, one for every protocol', () => {
  it('counts the chunks that carry tokens, not the events a protocol writes of them', () => {
    for (const [name, writer] of Object.entries(writers())) {
      let expected = 0;
      for (const [data, carries] of STREAM) {
        const out = writer.rewrite(data);
        if (carries) expected += 1;
        expect(writer.state.tokenChunks, `${name}: ${data}`).toBe(expected);
        // The first chunk writes Messages' message_start and ping, and Responses' response.created:
        // no tokens yet.
        if (expected === 0) expect([name, writer.state.firstTokenAt]).toEqual([name, null]);
        if (data === STREAM[0]![0] && name !== 'chat') expect(out, name).not.toBeNull();
      }
      // A client that leaves here is billed the five chunks, whichever protocol it reads (Responses
      // billed two: a custom tool's input is written when the call is done, and its chunks counted
      // no event).
      const billed = streamSettlement(writer.state, 'client_closed', () => 9, null);
      expect([name, billed.usage]).toEqual([name, { promptTokens: 9, completionTokens: 5 }]);
      expect(writer.state.firstTokenAt, name).toBeGreaterThan(0);
    }
  });
});
