import { describe, expect, it } from 'vitest';
import { withoutNullFields } from '../../../src/gateway/proxy/openai-shape.js';

describe('withoutNullFields', () => {
  it('drops null fields at every depth, keeping those OpenAI sends as null', () => {
    const chunk = JSON.parse(
      '{"id":"c1","system_fingerprint":null,"choices":[{"index":0,"delta":{"content":"hi","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":3,"prompt_tokens_details":null}}',
    ) as Record<string, unknown>;
    expect(withoutNullFields(chunk)).toEqual({
      id: 'c1',
      choices: [{ index: 0, delta: { content: 'hi' }, logprobs: null, finish_reason: null }],
      usage: { prompt_tokens: 3 },
    });
  });

  it('returns a copy, leaves the input as it was, and leaves out the top-level field asked for', () => {
    const chunk = { id: 'c1', model: 'm', usage: { prompt_tokens: 3 }, nested: { usage: 1 } };
    const before = structuredClone(chunk);
    expect(JSON.stringify(withoutNullFields(chunk, 'usage'))).toBe('{"id":"c1","model":"m","nested":{"usage":1}}');
    expect(chunk).toEqual(before);
  });

  it('never lets a "__proto__" key from JSON set a prototype', () => {
    const copy = withoutNullFields(JSON.parse('{"a":1,"__proto__":{"polluted":true}}') as Record<string, unknown>);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.stringify(copy)).toBe('{"a":1}');
  });

  it("drops what names the engine: llama.cpp's build string and timings", () => {
    const answer = JSON.parse(
      '{"id":"c1","system_fingerprint":"b1-5b4ebc5","choices":[],"usage":{"prompt_tokens":3},"timings":{"prompt_n":3,"predicted_per_second":480.1}}',
    ) as Record<string, unknown>;
    expect(withoutNullFields(answer)).toEqual({ id: 'c1', choices: [], usage: { prompt_tokens: 3 } });
  });
});
