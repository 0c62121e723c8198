import { and, eq, inArray, isNotNull, lte, or, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { apiKeys, models, wallets } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { unauthorized } from '../keys/caller.js';
import { insufficientFunds } from '../admission/refusals.js';
import { describeError, type Logger } from '../../shared/http/log.js';

/** What a call with no client is stopped for, and the error its result shows. */
export type StopReason = GatewayError;

/** A call this replica runs with no client: its organization, key and model, and how to stop it. */
interface DetachedCall {
  orgId: string;
  keyId: string;
  modelId: string;
  stop(reason: StopReason): void;
}

/**
 * The calls this replica runs with no client (background responses, batch lines), from their
 * admission to their settlement, so that a key revoked or expired, a model disabled, or an
 * organization's wallet spent stops them on every replica within a poll. Keys and models through
 * the catalog (`catalog/request-path-cache.ts`: every change to them moves the catalog version,
 * which each replica reads every TOLLGATE_CATALOG_POLL_MS; a change through this process is heard
 * at once). Wallets, whose balance moves with every charge and so moves no version, are read
 * directly (their balance, by primary key) as often, while this replica runs any such call: a
 * wallet at or below zero, on whichever replica its last charge or adjustment was written, stops
 * its organization's calls. A call stopped while it waits for room is given everything back; one
 * at the engine is aborted and billed what the engine generated, as any call cut short. Bounded by
 * the runners' own concurrency: one entry per running call, removed when it ends.
 */
export class DetachedCalls {
  private readonly calls = new Map<number, DetachedCall>();
  private nextId = 0;
  private checking: Promise<void> | null = null;
  private again = false;
  private walletTimer: NodeJS.Timeout | null = null;
  private readingWallets = false;

  constructor(
    private readonly db: Database,
    private readonly log: Logger,
    /** How often the wallets of the calls tracked are read while there are any (ms); 0: never. */
    private readonly walletPollMs = 0,
  ) {}

  /** Tracks a call until the returned function is called (when it is settled or given back). */
  track(call: DetachedCall): () => void {
    const id = this.nextId++;
    this.calls.set(id, call);
    if (this.walletPollMs > 0 && !this.walletTimer) {
      this.walletTimer = setInterval(() => void this.readWallets(), this.walletPollMs);
      this.walletTimer.unref();
    }
    return () => {
      this.calls.delete(id);
      if (this.calls.size === 0 && this.walletTimer) {
        clearInterval(this.walletTimer);
        this.walletTimer = null;
      }
    };
  }

  /**
   * Whether an organization's wallet is spent (its balance at or below zero) now, as PostgreSQL
   * has it: a batch line claimed a while ago asks before the engine.
   */
  async walletSpent(orgId: string): Promise<boolean> {
    return (await this.spentWallets([orgId])).size > 0;
  }

  /** The wallets' read of a poll: the calls of spent wallets stopped. One read at a time. */
  private async readWallets(): Promise<void> {
    if (this.readingWallets || this.calls.size === 0) return;
    this.readingWallets = true;
    try {
      const tracked = [...this.calls.values()];
      const spent = await this.spentWallets([...new Set(tracked.map((call) => call.orgId))]);
      for (const call of tracked) if (spent.has(call.orgId)) call.stop(insufficientFunds());
    } catch (error) {
      // The next poll reads them again.
      this.log.warn('calls with no client: their wallets could not be read', describeError(error));
    } finally {
      this.readingWallets = false;
    }
  }

  /** Which of `orgIds` have a wallet at or below zero. */
  private async spentWallets(orgIds: string[]): Promise<Set<string>> {
    if (orgIds.length === 0) return new Set();
    const rows = await this.db
      .select({ orgId: wallets.orgId })
      .from(wallets)
      .where(and(inArray(wallets.orgId, orgIds), lte(wallets.balance, 0n)));
    return new Set(rows.map((row) => row.orgId));
  }

  /**
   * A wallet's balance changed through this replica (an adjustment): its calls are stopped at
   * once if it is spent, not at the next poll.
   */
  walletChanged(): Promise<void> {
    return this.readWallets();
  }

  get size(): number {
    return this.calls.size;
  }

  /**
   * Reads again the keys and models of the calls tracked now, and stops those whose key is revoked
   * or expired, or whose model is disabled or gone. A check asked for while one runs runs once
   * more after it, so no change is missed.
   */
  recheck(): Promise<void> {
    if (this.calls.size === 0) return Promise.resolve();
    if (this.checking) {
      this.again = true;
      return this.checking;
    }
    this.checking = (async () => {
      do {
        this.again = false;
        await this.checkOnce().catch((error: unknown) => {
          // The next change, or the next poll that sees one, checks again.
          this.log.warn('calls with no client: their keys and models could not be read again', describeError(error));
        });
      } while (this.again);
    })().finally(() => {
      this.checking = null;
    });
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    const tracked = [...this.calls.values()];
    if (tracked.length === 0) return;
    const keyIds = [...new Set(tracked.map((call) => call.keyId))];
    const modelIds = [...new Set(tracked.map((call) => call.modelId))];
    const stoppedKeys = await this.db
      .select({ id: apiKeys.id, revokedAt: apiKeys.revokedAt })
      .from(apiKeys)
      .where(
        and(
          inArray(apiKeys.id, keyIds),
          or(isNotNull(apiKeys.revokedAt), and(isNotNull(apiKeys.expiresAt), lte(apiKeys.expiresAt, sql`now()`))),
        ),
      );
    const enabled = await this.db
      .select({ id: models.id })
      .from(models)
      .where(and(inArray(models.id, modelIds), eq(models.enabled, true)));
    const revoked = new Map(stoppedKeys.map((key) => [key.id, key.revokedAt !== null]));
    const served = new Set(enabled.map((model) => model.id));
    for (const call of tracked) {
      const keyRevoked = revoked.get(call.keyId);
      if (keyRevoked !== undefined)
        call.stop(unauthorized(keyRevoked ? 'This API key has been revoked.' : 'This API key has expired.'));
      else if (!served.has(call.modelId))
        call.stop(new GatewayError('model_not_found', 'This model is no longer served.'));
    }
  }
}
