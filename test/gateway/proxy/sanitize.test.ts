import { describe, expect, it } from 'vitest';
import { sanitizeUpstreamMessage, upstreamErrorMessage } from '../../../src/gateway/proxy/sanitize.js';

const names = { servedName: 'Qwen/Qwen2.5-7B-Instruct', clientName: 'qwen-7b' };

describe('sanitizeUpstreamMessage', () => {
  it.each([
    ['connect to http://10.0.0.7:8000/v1 failed', 'http://'],
    ['worker vllm-worker-7.internal died', 'vllm-worker-7.internal'],
    ['peer 10.1.2.3:8000 reset', '10.1.2.3'],
    ['bad input\nTraceback (most recent call last):\n  File "/usr/lib/python3/vllm/engine.py", line 42', 'Traceback'],
    ['see /opt/vllm/lib/python3.11/site-packages/x.py', 'site-packages'],
    ['listening on [fe80::1]:8000', 'fe80'],
  ])('removes the detail from %j', (message, leak) => {
    expect(sanitizeUpstreamMessage(message, names)).not.toContain(leak);
  });

  it("leaves llama.cpp's JSON library messages readable (was '[[redacted].type_error.302] …')", () => {
    expect(sanitizeUpstreamMessage('[json.exception.type_error.302] type must be string, but is array', names)).toBe(
      'type must be string, but is array',
    );
    // Was 'Failed to initialize samplers: st[redacted]xception' (read as an IPv6 address).
    expect(sanitizeUpstreamMessage('Failed to initialize samplers: std::exception', names)).toBe(
      'Failed to initialize samplers: std::exception',
    );
  });

  it('keeps what tells the client what to fix, naming the model as the client did', () => {
    const message =
      "This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.";
    expect(sanitizeUpstreamMessage(message, names)).toBe(message);
    expect(sanitizeUpstreamMessage('The model `Qwen/Qwen2.5-7B-Instruct` does not support tools.', names)).toBe(
      'The model `qwen-7b` does not support tools.',
    );
  });

  it('reads vLLM nested, legacy flat and plain-text error bodies', () => {
    expect(upstreamErrorMessage('{"error":{"message":"nested","type":"BadRequestError","code":400}}')).toBe('nested');
    expect(upstreamErrorMessage('{"object":"error","message":"flat","code":400}')).toBe('flat');
    expect(upstreamErrorMessage('{"error":"Unauthorized"}')).toBe('Unauthorized');
    expect(upstreamErrorMessage('plain')).toBe('plain');
  });
});
