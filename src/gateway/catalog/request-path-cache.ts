import { and, eq, isNull, or } from 'drizzle-orm';
import { LRUCache } from 'lru-cache';
import type { Database } from '../../shared/db/client.js';
import { catalogVersion, models, prices, projects } from '../../shared/db/schema.js';
import type { OutageLog } from '../../shared/http/outage.js';
import { type CallerKeyRow, callerKeyByHash } from '../keys/service.js';
import type { Budgets } from '../admission/budgets.js';
import type { ModelRow, PriceRow } from './service.js';

/** The models matching one requested name (by id, display name or repo id), with their prices. */
export type ModelMatches = Array<{ model: ModelRow; price: PriceRow | null }>;

/** What the request path reads of a project: its organization and its budgets. */
interface ProjectEntry {
  orgId: string;
  budgets: Budgets;
}

/**
 * Marks a lookup that found nothing, so a flood of unknown keys or names costs one read each, not
 * one per request.
 */
const NONE = Symbol('none');

export interface RequestPathCacheOptions {
  /**
   * How often to read the catalog version (ms); 0: never, for a store only
   * this process writes (PGlite). A change made elsewhere is seen within one
   * interval plus one read.
   */
  pollMs: number;
  /** Most keys (and, separately, model names and projects) kept. */
  maxEntries?: number;
}

/**
 * What the request path reads about a request before admitting it (its key,
 * its model and price, its project), kept in this process so a request in
 * steady state makes no database round trip.
 *
 * Freshness: every change to keys, models, prices, projects or organizations
 * moves `catalog_version` forward (a trigger, migration 0002), whoever makes
 * it. Each gateway reads that number every `pollMs` and drops everything it
 * holds when it moved; a write through this process's management API drops
 * it at once (`invalidate`). So a revoked key is refused on the replica that
 * revoked it from the next request, and on every other replica within
 * `pollMs` (250 ms by default) plus one read. A load that was under way
 * when the cache was dropped is not kept (`generation`), so an answer read
 * before a change never outlives it. Expiry needs no change: a key's expiry
 * time is checked on every request.
 *
 * While the database cannot be read, the cache keeps serving what it holds:
 * no change can be committed to an unreachable database either.
 *
 * @example
 * const cache = new RequestPathCache(db, storeOutage, { pollMs: 250 });
 * cache.start();
 * const row = await cache.keyByHash(hash);
 */
export class RequestPathCache {
  private readonly keys: LRUCache<string, CallerKeyRow | typeof NONE>;
  private readonly modelsByName: LRUCache<string, ModelMatches | typeof NONE>;
  private readonly projects: LRUCache<string, ProjectEntry | typeof NONE>;
  /** Moves on every drop; a load started under an older generation is not stored. */
  private generation = 0;
  private version: bigint | null = null;
  private timer: NodeJS.Timeout | null = null;
  private polling = false;
  /** Told of every drop: what runs on what was read before it checks again (`DetachedCalls`). */
  private readonly changeListeners: Array<() => void> = [];

  constructor(
    private readonly db: Database,
    /**
     * Told of every read's outcome, so a database outage is logged once when it starts and once
     * when it ends.
     */
    private readonly storeOutage: OutageLog,
    private readonly options: RequestPathCacheOptions,
  ) {
    const max = options.maxEntries ?? 100_000;
    this.keys = new LRUCache({ max });
    this.modelsByName = new LRUCache({ max: Math.min(max, 10_000) });
    this.projects = new LRUCache({ max });
  }

  /**
   * The key whose secret hashes to `hash`, or undefined. The caller still compares the hash in
   * constant time (`verifiedKey`).
   */
  keyByHash(hash: string): Promise<CallerKeyRow | undefined> {
    return this.through(this.keys, hash, () => callerKeyByHash(this.db, hash));
  }

  /**
   * The models `name` matches by id, display name or repo id, with their prices (`pickModel`
   * chooses).
   */
  async modelMatches(name: string): Promise<ModelMatches> {
    const rows = await this.through(this.modelsByName, name, () =>
      this.db
        .select({ model: models, price: prices })
        .from(models)
        .leftJoin(prices, eq(prices.modelId, models.id))
        .where(or(eq(models.id, name), eq(models.displayName, name), eq(models.hfRepoId, name))),
    );
    return rows ?? [];
  }

  /** The organization a project belongs to, or undefined when there is no such project. */
  async projectOrg(projectId: string): Promise<string | undefined> {
    return (await this.project(projectId))?.orgId;
  }

  /** A live project's budgets (`admission/budgets.ts`); undefined when there is no such project. */
  async projectBudgets(projectId: string): Promise<Budgets | undefined> {
    return (await this.project(projectId))?.budgets;
  }

  private project(projectId: string): Promise<ProjectEntry | undefined> {
    return this.through(this.projects, projectId, async () => {
      const [row] = await this.db
        .select({ orgId: projects.orgId, monthly: projects.monthlyBudget, daily: projects.dailyBudget })
        .from(projects)
        .where(and(eq(projects.id, projectId), isNull(projects.deletedAt)));
      return row && { orgId: row.orgId, budgets: { monthly: row.monthly, daily: row.daily } };
    });
  }

  /**
   * From `cache`, or read and kept (nothing found is kept too) unless the cache was dropped while
   * reading.
   */
  private async through<V extends NonNullable<unknown>>(
    cache: LRUCache<string, V | typeof NONE>,
    key: string,
    read: () => Promise<V | undefined>,
  ): Promise<V | undefined> {
    const cached = cache.get(key);
    if (cached !== undefined) return cached === NONE ? undefined : cached;
    const generation = this.generation;
    const value = await read();
    this.storeOutage.succeeded();
    if (generation === this.generation) cache.set(key, value ?? NONE);
    return value;
  }

  /**
   * Drops everything: the next request reads afresh. Called after every management write in this
   * process.
   */
  invalidate(): void {
    this.generation += 1;
    this.keys.clear();
    this.modelsByName.clear();
    this.projects.clear();
    for (const listener of this.changeListeners) listener();
  }

  /** Calls `listener` after every drop: a change made here, or the catalog version seen to move. */
  onChange(listener: () => void): void {
    this.changeListeners.push(listener);
  }

  /** Starts reading the catalog version every `pollMs` (nothing when 0). */
  start(): void {
    if (this.options.pollMs <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.poll(), this.options.pollMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Reads the catalog version once and drops the cache if it moved; exposed for tests. */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    const startedAt = Date.now();
    try {
      const [row] = await this.db
        .select({ version: catalogVersion.version })
        .from(catalogVersion)
        .where(eq(catalogVersion.id, 1));
      const version = row?.version ?? 0n;
      // The first read drops too: a change may have landed between start-up and now.
      if (version !== this.version) this.invalidate();
      this.version = version;
      this.storeOutage.succeeded();
    } catch (error) {
      // Keep serving: a change cannot be committed where we cannot read either.
      this.storeOutage.failed(error, startedAt);
    } finally {
      this.polling = false;
    }
  }
}
