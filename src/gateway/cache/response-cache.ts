import { createHash } from 'node:crypto';
import type { RedisClient } from '../../shared/db/redis.js';
import { LRUCache } from 'lru-cache';

/**
 * A whole answer as the client received it: a JSON body, or the data of every SSE event before
 * [DONE].
 */
export type CachedResponse =
  | { kind: 'json'; body: string; promptTokens: number; completionTokens: number }
  | { kind: 'sse'; events: string[]; promptTokens: number; completionTokens: number };

export interface ResponseCache {
  get(key: string): Promise<CachedResponse | null>;
  set(key: string, value: CachedResponse): Promise<void>;
  /** In-process only: the bytes the entries take now (undefined for Redis). */
  readonly bytes?: number;
}

export interface ResponseCacheOptions {
  /** null: in this process (the embedded default). */
  redis: RedisClient | null;
  prefix: string;
  ttlSeconds: number;
  /** Larger answers are not kept. */
  maxEntryBytes: number;
  /** In-process only: the most bytes all entries may take; the least recently used go first. */
  maxBytes: number;
}

/**
 * The per-key response cache. Entries are scoped by organization in their
 * key (see `cacheKey`), so one organization's answers are never served to
 * another. In Redis entries expire by TTL; in memory too, in an LRU bounded by bytes.
 *
 * @example
 * const cache = createResponseCache({ redis: null, prefix: 'tollgate:', ttlSeconds: 3600, maxEntryBytes: 1 << 20, maxBytes: 64 << 20 });
 * await cache.set(cacheKey(orgId, 'chat', body), { kind: 'json', body: text, promptTokens: 5, completionTokens: 9 });
 */
export function createResponseCache(options: ResponseCacheOptions): ResponseCache {
  const { redis, prefix, ttlSeconds, maxEntryBytes } = options;
  if (redis) {
    return {
      async get(key) {
        const text = await redis.get(prefix + key);
        return text ? (JSON.parse(text) as CachedResponse) : null;
      },
      async set(key, value) {
        const text = JSON.stringify(value);
        if (Buffer.byteLength(text) <= maxEntryBytes) await redis.set(prefix + key, text, 'EX', ttlSeconds);
      },
    };
  }
  // In memory: an LRU bounded by the bytes its entries take (see sizeOf), so the cache never holds
  // more than maxBytes.
  const entries = new LRUCache<string, CachedResponse>({
    maxSize: options.maxBytes,
    sizeCalculation: (value) => sizeOf(value),
    ttl: ttlSeconds * 1000,
  });
  return {
    async get(key) {
      return entries.get(key) ?? null;
    },
    async set(key, value) {
      if (Buffer.byteLength(JSON.stringify(value)) > maxEntryBytes) return;
      const bytes = sizeOf(value);
      if (bytes <= options.maxBytes) entries.set(key, value, { size: bytes });
    },
    get bytes() {
      return entries.calculatedSize;
    },
  };
}

/**
 * Bytes an entry takes in memory: its text at two bytes a character (the most a JavaScript string
 * takes), plus a little for the object.
 */
function sizeOf(value: CachedResponse): number {
  const text = value.kind === 'json' ? value.body.length : value.events.reduce((sum, event) => sum + event.length, 0);
  return 2 * text + 64;
}

/**
 * The cache key of a request: its organization, its endpoint, and its body
 * with object keys sorted, so the same request written in another key order
 * still hits. Streamed and JSON requests differ in `stream`, so each is cached
 * in its own form.
 */
export function cacheKey(orgId: string, endpoint: string, body: Record<string, unknown>): string {
  const digest = createHash('sha256')
    .update(`${endpoint}\n${canonicalJson(body)}`)
    .digest('hex');
  return `cache:${orgId}:${digest}`;
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
