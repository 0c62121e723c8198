import { describe, expect, it } from 'vitest';
import { keepCeilingWithinContext, sentBody } from '../../../src/gateway/requests/sent-body.js';

describe('the translated body the engine is sent', () => {
  const messages = [{ role: 'user', content: 'x'.repeat(4000) }];

  it('lowers a ceiling the context cannot hold beside the prompt, never removes it, and keeps one that fits', () => {
    const asked = { messages, max_tokens: 32_000 };
    keepCeilingWithinContext(asked, 8192);
    expect(asked.max_tokens).toBe(8192 - 1007);
    const none = { messages, max_tokens: 1 };
    keepCeilingWithinContext(none, 512);
    expect(none.max_tokens).toBe(1);
    const fits = { messages, max_tokens: 64 };
    keepCeilingWithinContext(fits, 8192);
    expect(fits.max_tokens).toBe(64);
    const tools = { messages, max_tokens: 32_000, tools: [{ type: 'function', function: { name: 'y'.repeat(4000) } }] };
    keepCeilingWithinContext(tools, 8192);
    expect(tools.max_tokens).toBeLessThan(8192 - 1007 - 999);
  });

  it('is written once: each replica gets the same JSON naming its own model, and its size is the bound', () => {
    const chat = { model: 'client-model', messages, max_tokens: 8, tools: [{ type: 'function' }] };
    const sent = sentBody(chat, true);
    // A stream whatever the client asked: a JSON answer is assembled from it.
    expect(JSON.parse(sent.forModel('served-a'))).toEqual({
      model: 'served-a',
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
      messages,
      max_tokens: 8,
      tools: [{ type: 'function' }],
    });
    expect(JSON.parse(sent.forModel('b"c'))).toMatchObject({ model: 'b"c', max_tokens: 8 });
    expect(sent.bytes).toBe(
      Buffer.byteLength(JSON.stringify({ messages, max_tokens: 8, tools: [{ type: 'function' }] })),
    );
    expect(JSON.parse(sentBody({ model: 'm' }, false).forModel('s'))).toEqual({ model: 's' });
    expect(chat.model).toBe('client-model');
  });
});
