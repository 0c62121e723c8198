import { describe, expect, it } from 'vitest';
import {
  batchPrice,
  costOf,
  formatAmount,
  MoneyFormatError,
  parseAmount,
  pricePerMillion,
  pricePerTokenFromMillion,
} from '../../../src/gateway/billing/money.js';

describe('money', () => {
  it('parses decimal amounts exactly into nanos', () => {
    expect(parseAmount('12.50')).toBe(12_500_000_000n);
    expect(parseAmount('0.000000001')).toBe(1n);
    expect(parseAmount('-3')).toBe(-3_000_000_000n);
    // 0.1 + 0.2 is exact here, as it never is in floats.
    expect(parseAmount('0.1') + parseAmount('0.2')).toBe(parseAmount('0.3'));
  });

  it.each(['', '1.2.3', '1e3', 'abc', '1.0000000001', ' ', '12,50', 'NaN'])('refuses %j', (text) => {
    expect(() => parseAmount(text)).toThrow(MoneyFormatError);
  });

  it('formats nanos with at least two decimals', () => {
    expect(formatAmount(12_500_000_000n)).toBe('12.50');
    expect(formatAmount(0n)).toBe('0.00');
    expect(formatAmount(1n)).toBe('0.000000001');
    expect(formatAmount(-1_250_000_000n)).toBe('-1.25');
  });

  it('turns prices per million tokens into whole nanos per token, refusing what would round', () => {
    expect(pricePerTokenFromMillion('0.15')).toBe(150n);
    expect(pricePerTokenFromMillion('2')).toBe(2_000n);
    expect(pricePerTokenFromMillion('0.001')).toBe(1n);
    expect(() => pricePerTokenFromMillion('0.0001')).toThrow(MoneyFormatError);
    expect(() => pricePerTokenFromMillion('-1')).toThrow(MoneyFormatError);
    expect(pricePerMillion(150n)).toBe('0.15');
  });

  it('costs tokens exactly', () => {
    expect(
      costOf({ promptTokens: 1_000_000, completionTokens: 1_000_000 }, { inputPerToken: 150n, outputPerToken: 600n }),
    ).toBe(parseAmount('0.75'));
    expect(costOf({ promptTokens: 3, completionTokens: 0 }, { inputPerToken: 7n, outputPerToken: 9n })).toBe(21n);
  });

  it('costs cached prompt tokens at the cached-input price, the others at the input price, exactly', () => {
    const price = { inputPerToken: 150n, cachedInputPerToken: 15n, outputPerToken: 600n };
    expect(costOf({ promptTokens: 1000, cachedTokens: 800, completionTokens: 10 }, price)).toBe(
      200n * 150n + 800n * 15n + 10n * 600n,
    );
    // No cached-input price: the input price, as before it existed.
    const plain = { inputPerToken: 150n, outputPerToken: 600n };
    expect(costOf({ promptTokens: 1000, cachedTokens: 800, completionTokens: 10 }, plain)).toBe(
      costOf({ promptTokens: 1000, completionTokens: 10 }, plain),
    );
    expect(
      costOf({ promptTokens: 1000, cachedTokens: 800, completionTokens: 10 }, { ...price, cachedInputPerToken: null }),
    ).toBe(1000n * 150n + 10n * 600n);
    // A cached count above the prompt is held to it: never a negative uncached count.
    expect(costOf({ promptTokens: 10, cachedTokens: 50, completionTokens: 0 }, price)).toBe(10n * 15n);
  });
});

describe('batchPrice', () => {
  it('is the batch rates where set, else the usual ones; a cached token never dearer than a batch input token', () => {
    const usual = { inputPerToken: 150n, cachedInputPerToken: 100n, outputPerToken: 600n };
    expect(batchPrice(usual)).toEqual({ inputPerToken: 150n, cachedInputPerToken: 100n, outputPerToken: 600n });
    expect(batchPrice({ ...usual, batchInputPerToken: 75n, batchOutputPerToken: 300n })).toEqual({
      inputPerToken: 75n,
      cachedInputPerToken: 75n,
      outputPerToken: 300n,
    });
    expect(batchPrice({ inputPerToken: 150n, outputPerToken: 600n, batchOutputPerToken: null })).toEqual({
      inputPerToken: 150n,
      cachedInputPerToken: 150n,
      outputPerToken: 600n,
    });
    // A batch line of 1,000 prompt tokens (800 cached) and 10 completion tokens, at half price.
    const half = batchPrice({
      inputPerToken: 150n,
      cachedInputPerToken: 15n,
      outputPerToken: 600n,
      batchInputPerToken: 75n,
      batchOutputPerToken: 300n,
    });
    expect(costOf({ promptTokens: 1000, cachedTokens: 800, completionTokens: 10 }, half)).toBe(
      200n * 75n + 800n * 15n + 10n * 300n,
    );
  });
});
