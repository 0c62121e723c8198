import { describe, expect, it } from 'vitest';
import { chargeFor, holdFor } from '../../../src/gateway/billing/holds.js';
import { clampUsage, sequencesOf, tokenBoundsOf } from '../../../src/gateway/billing/token-bounds.js';
import { estimateRequestTokens } from '../../../src/gateway/admission/estimate.js';

const price = { inputPerToken: 150n, outputPerToken: 600n };
const chat = (body: Record<string, unknown>) => ({ bodyBytes: 120, body, task: 'chat' as const, contextLength: 8192 });

describe('token bounds: every sequence the engine generates', () => {
  it('multiplies the completion bound by n', () => {
    expect(tokenBoundsOf(chat({ max_tokens: 50 }))).toEqual({ promptTokens: 120, completionTokens: 50 });
    expect(tokenBoundsOf(chat({ max_tokens: 50, n: 8 }))).toEqual({ promptTokens: 120, completionTokens: 400 });
    expect(tokenBoundsOf(chat({ max_completion_tokens: 100, n: 64 }))).toEqual({
      promptTokens: 120,
      completionTokens: 6400,
    });
  });

  it('takes best_of when it asks for more sequences than n', () => {
    expect(sequencesOf({ n: 2, best_of: 5 })).toBe(5);
    expect(sequencesOf({ n: 6, best_of: 5 })).toBe(6);
    expect(tokenBoundsOf(chat({ max_tokens: 10, n: 2, best_of: 5 })).completionTokens).toBe(50);
  });

  it('without max_tokens, bounds each sequence by the context length', () => {
    expect(tokenBoundsOf(chat({ n: 3 })).completionTokens).toBe(3 * 8192);
    expect(tokenBoundsOf(chat({ max_tokens: 1e9, n: 2 })).completionTokens).toBe(2 * 8192);
  });

  it('counts a count that is not a positive integer as one (validation refuses it before)', () => {
    for (const n of ['8', 8.5, 0, -3, null, 2 ** 60]) expect(sequencesOf({ n })).toBe(1);
  });

  it('embeddings generate nothing, whatever n says', () => {
    expect(tokenBoundsOf({ bodyBytes: 40, body: { input: 'x', n: 8 }, task: 'embedding', contextLength: 512 })).toEqual(
      { promptTokens: 40, completionTokens: 0 },
    );
  });

  it("the token limits' estimate counts every sequence too", () => {
    const messages = [{ role: 'user', content: 'hi' }];
    expect(estimateRequestTokens({ messages, max_tokens: 100 }, 'chat', 512)).toBe(108);
    expect(estimateRequestTokens({ messages, max_tokens: 100, n: 8 }, 'chat', 512)).toBe(808);
    expect(estimateRequestTokens({ messages, n: 2 }, 'chat', 512)).toBe(8 + 1024);
  });
});

describe('the charge: the usage held to the bounds, at most the hold', () => {
  it('charges what the engine reported for eight choices, within the hold', () => {
    const hold = holdFor(chat({ max_tokens: 50, n: 8 }), price);
    expect(hold.holdNanos).toBe(120n * 150n + 400n * 600n);
    const charge = chargeFor({ promptTokens: 12, completionTokens: 400 }, hold, price);
    expect(charge).toEqual({
      usage: { promptTokens: 12, completionTokens: 400 },
      excess: null,
      costNanos: 12n * 150n + 400n * 600n,
    });
  });

  it('clamps a count over the bounds and says by how much', () => {
    const hold = holdFor(chat({ max_tokens: 50, n: 8 }), price);
    const charge = chargeFor({ promptTokens: 500, completionTokens: 6400 }, hold, price);
    expect(charge.usage).toEqual({ promptTokens: 120, completionTokens: 400 });
    expect(charge.excess).toEqual({ promptTokens: 380, completionTokens: 6000 });
    expect(charge.costNanos).toBe(hold.holdNanos);
  });

  it('never exceeds the hold, even when the hold was taken on other bounds', () => {
    const hold = { bounds: { promptTokens: 100, completionTokens: 100 }, holdNanos: 1000n };
    expect(chargeFor({ promptTokens: 100, completionTokens: 100 }, hold, price).costNanos).toBe(1000n);
  });

  it('clampUsage leaves a count within bounds alone', () => {
    expect(clampUsage({ promptTokens: 3, completionTokens: 4 }, { promptTokens: 3, completionTokens: 4 })).toEqual({
      usage: { promptTokens: 3, completionTokens: 4 },
      excess: null,
    });
  });
});
