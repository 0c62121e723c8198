import { describe, expect, it } from 'vitest';
import { type CachedResponse, createResponseCache } from '../../../src/gateway/cache/response-cache.js';

const answer = (text: string): CachedResponse => ({ kind: 'json', body: text, promptTokens: 1, completionTokens: 1 });

describe('the in-memory response cache is bounded by bytes', () => {
  it('never holds more than maxBytes, however many answers it is given', async () => {
    const maxBytes = 1024 * 1024;
    const cache = createResponseCache({ redis: null, prefix: '', ttlSeconds: 60, maxEntryBytes: 64 * 1024, maxBytes });
    // 2,000 answers of 50 KB: 100 MB offered to a 1 MiB cache.
    for (let i = 0; i < 2_000; i++) {
      await cache.set(`k${i}`, answer(String(i).padEnd(50_000, 'x')));
      expect(cache.bytes!).toBeLessThanOrEqual(maxBytes);
    }
    expect(await cache.get('k1999')).not.toBeNull();
    expect(await cache.get('k0')).toBeNull();
  });

  it('evicts the least recently used answer first', async () => {
    const cache = createResponseCache({
      redis: null,
      prefix: '',
      ttlSeconds: 60,
      maxEntryBytes: 64 * 1024,
      maxBytes: 3 * (2 * 10_000 + 64),
    });
    for (const key of ['a', 'b', 'c']) await cache.set(key, answer(key.padEnd(10_000, 'x')));
    await cache.get('a'); // a is now the most recently used
    await cache.set('d', answer('d'.padEnd(10_000, 'x')));
    expect(await cache.get('b')).toBeNull();
    for (const key of ['a', 'c', 'd']) expect(await cache.get(key)).not.toBeNull();
  });

  it('keeps no answer larger than the entry limit', async () => {
    const cache = createResponseCache({
      redis: null,
      prefix: '',
      ttlSeconds: 60,
      maxEntryBytes: 1024,
      maxBytes: 1 << 20,
    });
    await cache.set('big', answer('x'.repeat(2_000)));
    expect(await cache.get('big')).toBeNull();
    expect(cache.bytes).toBe(0);
  });
});
