// The seam between what replicas report and who acts on it: the router
// scores replicas on it, the autoscaler scales on it, operators see it.
// The scraper that fills it reads each replica's vLLM `/metrics`.

/** A replica's load as its last `/metrics` scrape reported it. */
export interface ReplicaLoad {
  /** `vllm:num_requests_waiting`: requests queued, not yet in the running batch. */
  waiting: number;
  /** `vllm:num_requests_running`: requests in the running batch. */
  running: number;
  /** `vllm:kv_cache_usage_perc`, 0 to 1. */
  kvCacheUsage: number;
  /**
   * Prefix-cache hits over queries (`vllm:prefix_cache_hits_total` / `_queries_total`) since the
   * previous scrape; null before two scrapes or with no queries.
   */
  prefixHitRate: number | null;
  /**
   * `vllm:prefix_cache_queries_total` and `vllm:prefix_cache_hits_total` as last scraped (tokens
   * since the replica started): the all-time hit rate, and the base of the next `prefixHitRate`.
   * Optional: added after the contract was first shared.
   */
  prefixQueries?: number;
  prefixHits?: number;
  /**
   * `num_gpu_blocks` of `vllm:cache_config_info`: the KV blocks the replica has; null or absent
   * when not reported.
   */
  kvBlocks?: number | null;
  /** When it was scraped (ms since the epoch). */
  scrapedAt: number;
}

/**
 * The latest load of a replica by its id (`model/index`), or null when it was never scraped or its
 * last scrape is stale.
 */
export type LoadOf = (replicaId: string) => ReplicaLoad | null;
