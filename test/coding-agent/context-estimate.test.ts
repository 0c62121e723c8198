import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { ContextEstimate } from '../../src/coding-agent/context-estimate.js';

/** A message that counts how often it is written out as JSON. */
function counted(content: string): { message: ChatCompletionMessageParam; writes: () => number } {
  let writes = 0;
  const message = { role: 'user' as const, content };
  Object.defineProperty(message, 'toJSON', {
    enumerable: false,
    value: () => (writes++, { role: 'user', content }),
  });
  return { message, writes: () => writes };
}

describe("the conversation's token estimate", () => {
  it('is the characters at 4 a token before any call, and no bound for max_tokens yet', () => {
    const estimate = new ContextEstimate();
    const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: 'x'.repeat(100) }];
    const characters = JSON.stringify(messages[0]).length;
    expect(estimate.likely(messages)).toBe(characters / 4);
    expect(estimate.atMost(messages)).toBeNull();
  });

  it("is the last call's tokens plus the characters since, at 4 a token (likely) and 2 (at most)", () => {
    const estimate = new ContextEstimate();
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello' },
    ];
    estimate.measured(1000, 2);
    const added: ChatCompletionMessageParam = { role: 'tool', tool_call_id: 'call_0', content: 'y'.repeat(401) };
    messages.push(added);
    const characters = JSON.stringify(added).length;
    expect(estimate.likely(messages)).toBe(1000 + characters / 4);
    expect(estimate.atMost(messages)).toBe(Math.ceil(1000 + characters / 2));
    estimate.reset();
    expect(estimate.atMost(messages)).toBeNull();
  });

  it('writes each message out once, however often the conversation is estimated', () => {
    const estimate = new ContextEstimate();
    const parts = Array.from({ length: 20 }, (_, i) => counted(`message ${i}`));
    const messages = parts.map((p) => p.message);
    for (let call = 0; call < 10; call++) {
      estimate.likely(messages);
      estimate.atMost(messages);
      estimate.measured(100 * (call + 1), 5);
    }
    expect(parts.map((p) => p.writes())).toEqual(parts.map(() => 1));
  });
});
