import type { Logger } from '../../../shared/http/log.js';
import type { LoadOf, ReplicaLoad } from '../load.js';
import { parsePromText, type PromSample } from './prom-text.js';

/**
 * A replica to scrape: its id (`model/index`), base URL (no `/v1`) and the name its metrics carry
 * in `model_name`.
 */
export interface ScrapeTarget {
  id: string;
  url: string;
  servedModel: string;
}

export interface ScraperOptions {
  periodMs: number;
  /** The replicas to scrape now (read at every round: replicas come and go). */
  targets: () => ScrapeTarget[];
  log?: Logger;
  /**
   * This gateway's requests in flight on a replica: read when its scrape answers, to tell its load
   * from others'.
   */
  inFlightOf?: (replicaId: string) => number;
  /**
   * Requests a replica whose batch size is not known may be sent beyond what its last scrape showed
   * running (TOLLGATE_ROUTING_PROBE_SLOTS, 2 when not given): `capacityOf`.
   */
  probeSlots?: number;
}

interface Scraped {
  load: ReplicaLoad;
  /** Requests this gateway sent to the replica since the scrape: the scrape could not see them yet. */
  sentSince: number;
  /** This gateway's requests in flight on it when the scrape answered. */
  ownAtScrape: number;
}

/**
 * KV-cache use from which a replica's queue may be waiting on its cache rather than its batch: its
 * running count is then not learnt as its capacity. Half: a batch-bound vLLM with a cache sized for
 * it runs well below this, and a capacity not learnt only leaves the choice to the router (and flow
 * control unbounded, as without it).
 */
const KV_BOUND = 0.5;

/**
 * Reads every replica's vLLM `/metrics` every `periodMs` and keeps its latest `ReplicaLoad`. A
 * replica whose last answered scrape is older than four periods (at least 2 s: a busy event loop
 * delays scrapes) has no load (`loadOf` answers null): the router then falls back to least-loaded.
 * Scrapes of one replica never overlap; each is bounded by a timeout of one period (at least a
 * second).
 *
 * @example
 * const scraper = new LoadScraper({ periodMs: 250, targets: () => [{ id: 'm/0', url: 'http://127.0.0.1:8000', servedModel: 'm' }] });
 * scraper.start();
 * scraper.loadOf('m/0'); // null until the first scrape answers
 */
export class LoadScraper {
  private readonly scraped = new Map<string, Scraped>();
  private readonly busy = new Set<string>();
  /**
   * Per replica, the most requests it ran while others waited with its KV cache not full: its
   * batch's size, as the engine showed it.
   */
  private readonly learned = new Map<string, number>();
  /**
   * Per replica, its running count at the last scrape if requests waited then with its cache not
   * full, else null.
   */
  private readonly saturated = new Map<string, number | null>();
  /** Per replica, the batch size its engine says it has (llama.cpp's `total_slots` in `/props`). */
  private readonly told = new Map<string, number | null>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: ScraperOptions) {}

  /** The latest load of a replica, or null when it was never scraped or its last scrape is stale. */
  readonly loadOf: LoadOf = (replicaId) => {
    const entry = this.scraped.get(replicaId);
    if (!entry || Date.now() - entry.load.scrapedAt > this.staleMs) return null;
    return entry.load;
  };

  /**
   * The replica's batch size as its engine showed it: the most requests it ran while requests
   * waited and its KV cache was not full (vLLM's running and waiting, llama.cpp's processing and
   * deferred); null until it was seen so.
   */
  learnedCapacity(replicaId: string): number | null {
    return this.learned.get(replicaId) ?? null;
  }

  /**
   * The most sequences the replica is counted as taking (`routing/room.ts`), when no definition
   * says: what its engine says of itself (llama.cpp's slots), else what it showed when saturated
   * (`learnedCapacity`), else, until then, what its last scrape showed running plus `probeSlots`,
   * or no more than running when requests waited in it then. So a flood on engines nobody declared
   * fills their batches a few requests a scrape and never their own first-come-first-served
   * queues by more than those few. Null when it was never scraped (metrics of no engine known:
   * room unknown, as before flow control).
   */
  capacityOf(replicaId: string): number | null {
    const known = this.told.get(replicaId) ?? this.learned.get(replicaId);
    if (known !== undefined) return known;
    const last = this.scraped.get(replicaId)?.load;
    if (!last) return null;
    return last.running + (last.waiting > 0 ? 0 : (this.options.probeSlots ?? 2));
  }

  /**
   * Requests on the replica that are not this gateway's (other gateway replicas'), running or
   * waiting, at its last fresh scrape; 0 when not scraped.
   */
  othersOf(replicaId: string): number {
    const entry = this.scraped.get(replicaId);
    if (!entry || Date.now() - entry.load.scrapedAt > this.staleMs) return 0;
    return Math.max(0, entry.load.running + entry.load.waiting - entry.ownAtScrape);
  }

  /** Requests sent to the replica since its last scrape (0 when never scraped). */
  sentSinceScrape(replicaId: string): number {
    return this.scraped.get(replicaId)?.sentSince ?? 0;
  }

  /** Counts a request sent to the replica, until the next scrape sees it. */
  noteSent(replicaId: string): void {
    const entry = this.scraped.get(replicaId);
    if (entry) entry.sentSince++;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.scrapeAll(), this.options.periodMs);
    this.timer.unref();
    void this.scrapeAll();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * One round over every target, resolved when all answered or failed (tests and the first round
   * call it directly).
   */
  async scrapeAll(): Promise<void> {
    const targets = this.options.targets();
    const live = new Set(targets.map((t) => t.id));
    for (const id of this.scraped.keys()) if (!live.has(id)) this.scraped.delete(id);
    for (const id of this.learned.keys()) if (!live.has(id)) this.learned.delete(id);
    for (const id of this.saturated.keys()) if (!live.has(id)) this.saturated.delete(id);
    for (const id of this.told.keys()) if (!live.has(id)) this.told.delete(id);
    await Promise.all(targets.map((target) => this.scrape(target)));
  }

  private get staleMs(): number {
    return Math.max(4 * this.options.periodMs, 2000);
  }

  private async scrape(target: ScrapeTarget): Promise<void> {
    if (this.busy.has(target.id)) return;
    this.busy.add(target.id);
    try {
      const res = await fetch(`${target.url}/metrics`, {
        signal: AbortSignal.timeout(Math.max(this.options.periodMs, 1000)),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const samples = parsePromText(await res.text());
      const previous = this.scraped.get(target.id)?.load;
      const load = loadFromSamples(samples, target.servedModel, previous);
      // Metrics of no engine the gateway knows: the replica's load is unknown (never idle), as if
      // not scraped.
      if (load === null) throw new Error('no queue figures among its metrics (neither vllm:* nor llamacpp:*)');
      this.scraped.set(target.id, { load, sentSince: 0, ownAtScrape: this.options.inFlightOf?.(target.id) ?? 0 });
      if (!this.told.has(target.id) && samples.some((s) => s.name.startsWith('llamacpp:'))) await this.askSlots(target);
      // A queue behind a full KV cache says nothing of the batch's size: there the running count is
      // how many sequences the cache holds (20 to 40 of a 128-sequence batch in the routing bench),
      // and taken as the capacity it made every replica holding a prefix "full", so affinity lost
      // to whichever had room. Seen on two scrapes in a row, the fewer of the two: a burst that
      // arrived within one engine step (every request of a cold start) waits a moment behind a
      // running count that is no batch's size.
      const before = this.saturated.get(target.id) ?? null;
      const now = load.waiting > 0 && load.kvCacheUsage < KV_BOUND ? load.running : null;
      this.saturated.set(target.id, now);
      if (now !== null && before !== null && Math.min(now, before) > (this.learned.get(target.id) ?? 0))
        this.learned.set(target.id, Math.min(now, before));
    } catch (error) {
      this.options.log?.debug('replica metrics scrape failed', {
        replica: target.id,
        detail: (error as Error).message,
      });
    } finally {
      this.busy.delete(target.id);
    }
  }

  /**
   * llama.cpp's server says its slots (`--parallel`) in `/props` as `total_slots`: asked once a
   * replica, its batch size from then on (null, and not asked again, when it does not say).
   */
  private async askSlots(target: ScrapeTarget): Promise<void> {
    const props = await fetch(`${target.url}/props`, {
      signal: AbortSignal.timeout(Math.max(this.options.periodMs, 1000)),
    })
      .then((res) => (res.ok ? (res.json() as Promise<{ total_slots?: unknown }>) : null))
      .catch(() => null);
    const slots = props?.total_slots;
    this.told.set(target.id, typeof slots === 'number' && Number.isInteger(slots) && slots > 0 ? slots : null);
  }
}

// vLLM reports its cache's size as a label of an info gauge, but not its batch's
// (`--max-num-seqs`): that is declared, learnt, or probed (`capacityOf`).
/**
 * llama.cpp's server (`--metrics`): `llamacpp:requests_deferred` are the
 * requests waiting for a slot, `llamacpp:requests_processing` the slots at
 * work. It reports no cache use (0 here: the same for every replica, so the
 * KV score does not tell them apart) and no prefix-cache counters.
 */
function llamaCppLoad(sum: (name: string) => number | null): ReplicaLoad | null {
  const waiting = sum('llamacpp:requests_deferred');
  const running = sum('llamacpp:requests_processing');
  if (waiting === null || running === null) return null;
  return {
    waiting,
    running,
    kvCacheUsage: 0,
    prefixHitRate: null,
    prefixQueries: 0,
    prefixHits: 0,
    kvBlocks: null,
    scrapedAt: Date.now(),
  };
}

function kvBlocksOf(samples: readonly PromSample[]): number | null {
  const info = samples.find((s) => s.name === 'vllm:cache_config_info');
  const blocks = Number(info?.labels.num_gpu_blocks);
  return Number.isInteger(blocks) && blocks > 0 ? blocks : null;
}

/**
 * A replica's load from its metrics: the samples of its served model (all
 * samples of a name when none carries that `model_name`), summed over
 * engines. The prefix hit rate is over the counters' growth since `previous`.
 * vLLM's `vllm:*` series, or llama.cpp's `llamacpp:*` (`llamaCppLoad`); null
 * when neither is there: an unknown load, which the router never takes for idle.
 *
 * @example
 * loadFromSamples(parsePromText(text), 'qwen', null)?.waiting;
 */
export function loadFromSamples(
  samples: readonly PromSample[],
  servedModel: string,
  previous: ReplicaLoad | null | undefined,
): ReplicaLoad | null {
  const sum = (name: string): number | null => {
    const named = samples.filter((s) => s.name === name);
    if (named.length === 0) return null;
    const own = named.filter((s) => s.labels.model_name === servedModel);
    return (own.length > 0 ? own : named).reduce((total, s) => total + s.value, 0);
  };
  if (!samples.some((s) => s.name.startsWith('vllm:'))) return llamaCppLoad(sum);
  const queries = sum('vllm:prefix_cache_queries_total') ?? 0;
  const hits = sum('vllm:prefix_cache_hits_total') ?? 0;
  let prefixHitRate: number | null = null;
  const before = { queries: previous?.prefixQueries ?? 0, hits: previous?.prefixHits ?? 0 };
  if (previous && queries > before.queries) prefixHitRate = (hits - before.hits) / (queries - before.queries);
  return {
    waiting: sum('vllm:num_requests_waiting') ?? 0,
    running: sum('vllm:num_requests_running') ?? 0,
    // Older vLLM names the gauge gpu_cache_usage_perc.
    kvCacheUsage: Math.min(1, sum('vllm:kv_cache_usage_perc') ?? sum('vllm:gpu_cache_usage_perc') ?? 0),
    prefixHitRate,
    prefixQueries: queries,
    prefixHits: hits,
    kvBlocks: kvBlocksOf(samples),
    scrapedAt: Date.now(),
  };
}
