import { describe, expect, it } from 'vitest';
import { clampUsage } from '../../../src/gateway/billing/token-bounds.js';
import { usageFrom } from '../../../src/gateway/proxy/token-counts.js';

describe("the engine's usage read", () => {
  it('reads the cached prompt tokens and the reasoning tokens vLLM and llama.cpp report', () => {
    expect(
      usageFrom({
        prompt_tokens: 120,
        completion_tokens: 30,
        total_tokens: 150,
        prompt_tokens_details: { cached_tokens: 96 },
        completion_tokens_details: { reasoning_tokens: 20 },
      }),
    ).toEqual({ promptTokens: 120, completionTokens: 30, cachedTokens: 96, reasoningTokens: 20 });
    // vLLM without --enable-prompt-tokens-details says null.
    expect(usageFrom({ prompt_tokens: 5, completion_tokens: 1, prompt_tokens_details: null })).toEqual({
      promptTokens: 5,
      completionTokens: 1,
    });
  });

  it('counts a malformed detail as none, and holds a detail above its total to it', () => {
    for (const cached of [-1, 1.5, '10', 2 ** 60, null])
      expect(
        usageFrom({ prompt_tokens: 12, completion_tokens: 0, prompt_tokens_details: { cached_tokens: cached } }),
      ).toEqual({ promptTokens: 12, completionTokens: 0 });
    expect(
      usageFrom({
        prompt_tokens: 12,
        completion_tokens: 3,
        prompt_tokens_details: { cached_tokens: 99 },
        completion_tokens_details: { reasoning_tokens: 7 },
      }),
    ).toEqual({ promptTokens: 12, completionTokens: 3, cachedTokens: 12, reasoningTokens: 3 });
  });

  it('keeps the cached and reasoning counts within their totals when the usage is clamped to the bounds', () => {
    const { usage } = clampUsage(
      { promptTokens: 1000, completionTokens: 500, cachedTokens: 900, reasoningTokens: 400 },
      { promptTokens: 600, completionTokens: 100 },
    );
    expect(usage).toEqual({ promptTokens: 600, completionTokens: 100, cachedTokens: 600, reasoningTokens: 100 });
  });
});
