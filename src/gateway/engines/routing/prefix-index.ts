import { LRUCache } from 'lru-cache';

export interface PrefixIndexOptions {
  /**
   * Most block hashes kept per replica (the least recently used go first), unless the replica's own
   * cache is known to be smaller.
   */
  maxEntriesPerReplica: number;
  /** A hash not seen again for this long is forgotten (the replica's cache has likely evicted it). */
  ttlMs: number;
}

/**
 * An approximate picture of each replica's KV cache: per replica, the
 * chained block hashes of the prompts sent to it recently, in an LRU of as
 * many entries as the replica has KV blocks (its `vllm:cache_config_info`
 * `num_gpu_blocks`, when known), so the picture forgets what the replica
 * itself has most likely evicted, as the Inference Extension's prefix plugin
 * does (`lruCapacityPerServer`). Bounded in memory by
 * `maxEntriesPerReplica` per replica, with expiry (lru-cache). Each hash
 * keeps the time it was last recorded, compared when it is read: lru-cache's
 * own expiry times every entry as it is set, which for an agent's 200 KB
 * prompt (3,000 blocks) cost more than hashing the prompt.
 *
 * @example
 * const index = new PrefixIndex({ maxEntriesPerReplica: 50_000, ttlMs: 600_000 });
 * index.record(hashes, 'm/0', 2048);
 * index.matches(hashes); // Map { 'm/0' => hashes.length }
 */
export class PrefixIndex {
  /** Per replica: block hash → `performance.now()` when a prompt holding it was last sent there. */
  private readonly replicas = new Map<string, LRUCache<number, number>>();

  constructor(private readonly options: PrefixIndexOptions) {}

  /** Hashes held over all replicas. */
  get size(): number {
    let size = 0;
    for (const lru of this.replicas.values()) size += lru.size;
    return size;
  }

  /**
   * A prompt with these block hashes went to `replicaId`, whose cache holds `kvBlocks` blocks
   * (null: unknown).
   */
  record(hashes: readonly number[], replicaId: string, kvBlocks: number | null): void {
    const lru = this.lruOf(replicaId, Math.min(this.options.maxEntriesPerReplica, kvBlocks ?? Infinity));
    const now = performance.now();
    for (const hash of hashes) lru.set(hash, now);
  }

  /** Forgets replicas not in `live` (gone, scaled down). */
  retain(live: ReadonlySet<string>): void {
    for (const id of this.replicas.keys()) if (!live.has(id)) this.replicas.delete(id);
  }

  /**
   * For each replica, how many leading blocks of the prompt it is believed to
   * hold (a block counts only if every block before it does, as a cache hit needs).
   *
   * @example
   * index.matches(hashes); // Map { 'm/0' => 12, 'm/3' => 4 }
   */
  matches(hashes: readonly number[]): Map<string, number> {
    const matched = new Map<string, number>();
    const oldest = performance.now() - this.options.ttlMs;
    for (const [id, lru] of this.replicas) {
      let count = 0;
      while (count < hashes.length && (lru.peek(hashes[count]!) ?? -Infinity) >= oldest) count++;
      if (count > 0) matched.set(id, count);
    }
    return matched;
  }

  // The replica's LRU, remade (keeping its most recent entries) when its bound changed.
  private lruOf(replicaId: string, max: number): LRUCache<number, number> {
    const existing = this.replicas.get(replicaId);
    if (existing && existing.max === max) return existing;
    const lru = new LRUCache<number, number>({ max });
    if (existing)
      for (const [key, recordedAt] of [...existing.rentries()].slice(-max))
        if (key !== undefined && recordedAt !== undefined) lru.set(key, recordedAt);
    this.replicas.set(replicaId, lru);
    return lru;
  }
}
