import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A whole answer as the client received it: a JSON body, or the data of every SSE event before [DONE]. */
export type CachedResponse =
  | { kind: 'json'; body: string; promptTokens: number; completionTokens: number }
  | { kind: 'sse'; events: string[]; promptTokens: number; completionTokens: number };

export interface ResponseCache {
  get(key: string): Promise<CachedResponse | null>;
  set(key: string, value: CachedResponse): Promise<void>;
}

export interface ResponseCacheOptions {
  /** null: in this process (the embedded default). */
  redis: Redis | null;
  prefix: string;
  ttlSeconds: number;
  /** Larger answers are not kept. */
  maxEntryBytes: number;
  /** In-process only: the most entries kept; the oldest go first. */
  maxEntries?: number;
}

/**
 * The per-key response cache. Entries are scoped by organization in their
 * key (see `cacheKey`), so one organization's answers are never served to
 * another. In Redis entries expire by TTL; in memory too, with a bound on count.
 *
 * @example
 * const cache = createResponseCache({ redis: null, prefix: 'tollgate:', ttlSeconds: 3600, maxEntryBytes: 1 << 20 });
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
  const maxEntries = options.maxEntries ?? 10_000;
  const entries = new Map<string, { value: CachedResponse; expiresAt: number }>();
  return {
    async get(key) {
      const entry = entries.get(key);
      if (!entry) return null;
      if (entry.expiresAt <= Date.now()) {
        entries.delete(key);
        return null;
      }
      return entry.value;
    },
    async set(key, value) {
      if (Buffer.byteLength(JSON.stringify(value)) > maxEntryBytes) return;
      entries.delete(key);
      entries.set(key, { value, expiresAt: Date.now() + ttlSeconds * 1000 });
      // Maps keep insertion order: the first entry is the oldest.
      while (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
    },
  };
}

/**
 * The cache key of a request: its organization, its endpoint, and its body
 * with object keys sorted, so the same request written in another key order
 * still hits. Streamed and JSON requests differ in `stream`, so each is cached
 * in its own form.
 */
export function cacheKey(orgId: string, endpoint: string, body: Record<string, unknown>): string {
  const digest = createHash('sha256').update(`${endpoint}\n${canonicalJson(body)}`).digest('hex');
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
