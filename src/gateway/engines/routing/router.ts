import { LRUCache } from 'lru-cache';
import type { RoutingSettings } from '../../../config/index.js';
import type { LoadOf, ReplicaLoad } from '../load.js';
import { PrefixIndex } from './prefix-index.js';
import { promptBlockHashes, type RoutingHint, sessionOf } from './prompt-blocks.js';

/** A ready replica the router may choose. */
export interface Candidate {
  id: string;
  /** Requests this gateway has in flight on it. */
  inFlight: number;
}

/** The choice and why: what the trace span and the debug log show. */
export interface RoutingDecision {
  replicaId: string;
  policy: RoutingSettings['policy'] | 'least-loaded-fallback';
  /**
   * Per candidate: its total score, and the parts (queue, kv, prefix, session), for a scored
   * choice; empty otherwise.
   */
  scores: Record<string, { total: number; queue: number; kv: number; prefix: number; session: number }>;
  /** Prompt blocks the chosen replica is believed to hold, of all the prompt's blocks. */
  prefixBlocks: { matched: number; total: number };
}

/** The sources of a scored choice: the scraper's loads and this gateway's sends since each scrape. */
export interface LoadSource {
  loadOf: LoadOf;
  sentSinceScrape(replicaId: string): number;
  noteSent(replicaId: string): void;
}

const SESSIONS_KEPT = 50_000;

/**
 * Chooses a replica the way the Gateway API Inference Extension's scorers
 * do: each candidate gets, weighted, a queue score (1 for the shortest queue,
 * 0 for the longest: `vllm:num_requests_waiting` plus what this gateway sent
 * since the scrape), a KV score (1 − `vllm:kv_cache_usage_perc`), a prefix
 * score (the share of the prompt's leading blocks the prefix index believes
 * it holds) and a session score (1 for the replica that served the session
 * last); the highest total wins, ties go to the fewest in flight, then in
 * turn. When any candidate has no fresh metrics, least-loaded decides.
 *
 * @example
 * const router = new ReplicaRouter(settings, scraper);
 * const decision = router.choose([{ id: 'm/0', inFlight: 2 }, { id: 'm/1', inFlight: 0 }], { body });
 */
export class ReplicaRouter {
  private readonly index: PrefixIndex;
  private readonly sessions: LRUCache<string, string>;
  private rotation = 0;

  constructor(
    readonly settings: RoutingSettings,
    private loads: LoadSource | null,
    /**
     * The engine's `cache_sharing`: unless `shared`, the index keys prompts by organization, as the
     * engine's cache.
     */
    private readonly cacheSharing: 'per-organization' | 'shared' = 'per-organization',
  ) {
    this.index = new PrefixIndex({ maxEntriesPerReplica: settings.prefixEntries, ttlMs: settings.prefixTtlMs });
    this.sessions = new LRUCache<string, string>({ max: SESSIONS_KEPT, ttl: settings.prefixTtlMs });
  }

  /** Block hashes the prefix index holds (bounded by `prefixEntries`). */
  get indexedBlocks(): number {
    return this.index.size;
  }

  /**
   * Scores on these loads from now on (the scraper, made after the router that its targets call
   * back).
   */
  useLoads(loads: LoadSource): void {
    this.loads = loads;
  }

  /** Forgets what it knew of replicas not in `live`. */
  retain(live: ReadonlySet<string>): void {
    this.index.retain(live);
  }

  /**
   * Picks one of `candidates` (at least one) and records it in the prefix index and the session
   * map.
   */
  choose(candidates: readonly Candidate[], hint?: RoutingHint): RoutingDecision {
    const { policy } = this.settings;
    if (policy === 'round-robin') return this.plain(candidates[this.rotation++ % candidates.length]!, 'round-robin');
    if (policy === 'least-loaded') return this.plain(this.leastLoaded(candidates), 'least-loaded');
    const hashes =
      hint && this.settings.prefixWeight > 0
        ? promptBlockHashes(
            hint.body,
            this.settings.prefixBlockChars,
            this.cacheSharing === 'shared' ? undefined : hint.organization,
          )
        : [];
    const session = hint ? sessionOf(hint) : null;
    const loads = this.loads;
    // One reading per candidate: a load can go stale between two readings.
    const snapshot = candidates.map((c) => loads?.loadOf(c.id) ?? null);
    const decision =
      !loads || snapshot.some((load) => load === null)
        ? this.plain(this.leastLoaded(candidates), 'least-loaded-fallback')
        : this.scored(
            loads,
            candidates,
            snapshot as ReplicaLoad[],
            hashes,
            session === null ? undefined : this.sessions.get(session),
          );
    // Kept up to date on a fallback too: the prompt now sits in that replica's cache.
    this.index.record(hashes, decision.replicaId, loads?.loadOf(decision.replicaId)?.kvBlocks ?? null);
    if (session !== null) this.sessions.set(session, decision.replicaId);
    return decision;
  }

  private scored(
    loads: LoadSource,
    candidates: readonly Candidate[],
    snapshot: readonly ReplicaLoad[],
    hashes: readonly number[],
    sessionReplica: string | undefined,
  ): RoutingDecision {
    const { queueWeight, kvWeight, prefixWeight, sessionWeight } = this.settings;
    const queues = candidates.map((c, i) => snapshot[i]!.waiting + loads.sentSinceScrape(c.id));
    const least = Math.min(...queues);
    const most = Math.max(...queues);
    const matches = this.index.matches(hashes);
    // Affinity yields to load: a replica already this much busier than the least busy one (by this
    // gateway's own count, which a burst moves before any scrape can) wins on its queue and cache
    // use only. Before, a burst of 10 requests sharing a system prompt went 10/0 to one llama.cpp
    // replica. The slack grows with the load: at saturation (dozens in flight on every replica) a
    // difference of a few is noise, and a fixed slack of 2 turned affinity off on it (shared-prefix
    // bench: 76 % hits instead of 93 %).
    const fewestInFlight = Math.min(...candidates.map((c) => c.inFlight));
    const slack = Math.max(
      this.settings.affinitySlack ?? 2,
      Math.floor(fewestInFlight * (this.settings.affinitySlackShare ?? 0.5)),
    );
    const scores: RoutingDecision['scores'] = {};
    const totals: number[] = [];
    candidates.forEach((candidate, i) => {
      const queue = most === least ? 1 : 1 - (queues[i]! - least) / (most - least);
      const kv = 1 - snapshot[i]!.kvCacheUsage;
      const affine = candidate.inFlight - fewestInFlight <= slack;
      const prefix = hashes.length === 0 || !affine ? 0 : (matches.get(candidate.id) ?? 0) / hashes.length;
      const session = sessionReplica === candidate.id && affine ? 1 : 0;
      const total = queueWeight * queue + kvWeight * kv + prefixWeight * prefix + sessionWeight * session;
      scores[candidate.id] = {
        total: round(total),
        queue: round(queue),
        kv: round(kv),
        prefix: round(prefix),
        session,
      };
      totals.push(total);
    });
    // The highest total; among equals the fewest in flight; among those, in turn. Taking the first
    // of a tie sent every request of a quiet gateway, whose scrapes zero what it sent, to the first
    // replica.
    const top = Math.max(...totals);
    const atTop = candidates.filter((_, i) => totals[i]! >= top - 1e-9);
    const chosen = this.leastLoaded(atTop);
    loads.noteSent(chosen.id);
    return {
      replicaId: chosen.id,
      policy: 'scored',
      scores,
      prefixBlocks: { matched: matches.get(chosen.id) ?? 0, total: hashes.length },
    };
  }

  // Fewest in flight; ties take turns.
  private leastLoaded(candidates: readonly Candidate[]): Candidate {
    const fewest = Math.min(...candidates.map((c) => c.inFlight));
    const tied = candidates.filter((c) => c.inFlight === fewest);
    return tied[this.rotation++ % tied.length]!;
  }

  private plain(chosen: Candidate, policy: RoutingDecision['policy']): RoutingDecision {
    this.loads?.noteSent(chosen.id);
    return { replicaId: chosen.id, policy, scores: {}, prefixBlocks: { matched: 0, total: 0 } };
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
