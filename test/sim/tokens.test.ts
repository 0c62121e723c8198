import { describe, expect, it } from 'vitest';
import { countTokens, joinWords, pickWords, splitTokens } from '../../src/sim/tokens.js';

describe('tokenizer', () => {
  it('counts exactly the matches of /\\w+|[^\\s\\w]/g', () => {
    const samples = [
      '',
      'Hello, world!',
      '  spaced\tout\n',
      'snake_case x2 3.14',
      'naïve café',
      '😀 emoji',
      'a\u00a0b\u2003c\ufeffd',
    ];
    // Plus random strings over a mixed alphabet.
    const alphabet = 'ab_9 ,.\t\n\u00a0é😀\u3000-';
    for (let n = 0; n < 200; n++) {
      let s = '';
      for (let i = 0; i < 30; i++) s += alphabet[(n * 31 + i * 17 + ((n * i) % 7)) % alphabet.length];
      samples.push(s);
    }
    for (const sample of samples) {
      expect(countTokens(sample), JSON.stringify(sample)).toBe((sample.match(/\w+|[^\s\w]/g) ?? []).length);
      expect(splitTokens(sample)).toHaveLength(countTokens(sample));
    }
  });

  it('generates the same words from the same seed', () => {
    expect(pickWords(42, 10)).toEqual(pickWords(42, 10));
    expect(pickWords(42, 10)).not.toEqual(pickWords(43, 10));
    const words = pickWords(1, 12);
    expect(countTokens(joinWords(words, 0, 12))).toBe(12);
  });
});
