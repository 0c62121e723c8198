// The simulator's tokenizer and its deterministic "model output". One token is
// a run of word characters or a single other non-space character, exactly the
// matches of `/\w+|[^\s\w]/g`, so generated text tokenizes back to its length.

const TOKEN_PATTERN = /\w+|[^\s\w]/g;

/** Plain ASCII words: chunks can embed them in JSON without escaping. */
// Kept packed: the formatter would put one word a line.
// prettier-ignore
const WORDS: readonly string[] = [
  'the', 'model', 'answer', 'is', 'simple', 'and', 'clear', 'token',
  'stream', 'value', 'result', 'data', 'this', 'that', 'with', 'from',
  'gateway', 'engine', 'request', 'reply', 'quick', 'brown', 'fox', 'jumps',
  'over', 'lazy', 'dog', 'light', 'river', 'stone', 'cloud', 'field',
  'we', 'can', 'see', 'it', 'here', 'now', 'then', 'again',
  'more', 'less', 'good', 'fine', 'small', 'large', 'fast', 'slow',
  'first', 'next', 'last', 'step', 'plan', 'check', 'count', 'write',
  'read', 'test', 'note', 'idea', 'point', 'part', 'whole', 'end',
];
const SPACED: readonly string[] = WORDS.map((word) => ` ${word}`);

/** FNV-1a offset basis: the start value for {@link hashText}. */
export const HASH_START = 0x811c9dc5;

/**
 * Counts tokens without allocating (same result as matching `/\w+|[^\s\w]/g`).
 *
 * @example
 * countTokens('Hello, world!'); // 4
 */
export function countTokens(text: string): number {
  let count = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isWordChar(c)) {
      if (!inWord) count++;
      inWord = true;
    } else {
      inWord = false;
      if (!isSpace(c)) count++;
    }
  }
  return count;
}

/**
 * Splits text into token strings (for /tokenize, where the strings are needed).
 *
 * @example
 * splitTokens('Hi there.'); // ['Hi', 'there', '.']
 */
export function splitTokens(text: string): string[] {
  return text.match(TOKEN_PATTERN) ?? [];
}

/**
 * A stable fake vocabulary id for a token string.
 *
 * @example
 * tokenId('hello') === tokenId('hello'); // true
 */
export function tokenId(token: string): number {
  return hashText(HASH_START, token) % 150_000;
}

/**
 * Folds text into a 32-bit FNV-1a hash; chain calls to hash several strings.
 *
 * @example
 * const h = hashText(hashText(HASH_START, 'user'), 'Hello');
 */
export function hashText(hash: number, text: string): number {
  let h = hash;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Folds an integer into an FNV-1a hash (for token-id inputs).
 *
 * @example
 * const h = hashInt(HASH_START, 42);
 */
export function hashInt(hash: number, value: number): number {
  let h = hash;
  let v = value | 0;
  for (let i = 0; i < 4; i++) {
    h ^= v & 0xff;
    h = Math.imul(h, 0x01000193);
    v >>>= 8;
  }
  return h >>> 0;
}

/**
 * A seeded 32-bit generator (mulberry32): same seed, same sequence.
 *
 * @example
 * const next = createRandom(7);
 * next(); // an unsigned 32-bit integer
 */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/**
 * Picks `count` word indexes deterministically from a seed.
 *
 * @example
 * const words = pickWords(1234, 16); // Uint8Array of indexes into WORDS
 */
export function pickWords(seed: number, count: number): Uint8Array {
  const next = createRandom(seed);
  const words = new Uint8Array(count);
  // WORDS has 64 entries: the top 6 bits pick one.
  for (let i = 0; i < count; i++) words[i] = next() >>> 26;
  return words;
}

/**
 * The text of one generated token: a word, with a leading space unless it opens the text.
 *
 * @example
 * tokenText(0, true); // 'the'
 * tokenText(0, false); // ' the'
 */
export function tokenText(word: number, first: boolean): string {
  return (first ? WORDS : SPACED)[word] ?? '';
}

/**
 * Joins the words `from` (inclusive) to `to` (exclusive) into text.
 *
 * @example
 * joinWords(pickWords(1, 4), 0, 4); // four words separated by spaces
 */
export function joinWords(words: Uint8Array, from: number, to: number): string {
  let text = '';
  for (let i = from; i < to; i++) text += tokenText(words[i] ?? 0, i === from);
  return text;
}

function isWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

// The code units JavaScript's \s matches.
function isSpace(c: number): boolean {
  if (c === 32 || (c >= 9 && c <= 13)) return true;
  if (c < 0xa0) return false;
  return (
    c === 0xa0 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}
