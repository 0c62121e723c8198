import { and, asc, count, eq, gt, inArray, lt, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { backgroundResponseEvents, backgroundResponses } from '../../shared/db/schema.js';
import { Lease } from '../../shared/db/lease.js';
import { withinStoreOr503 } from '../../shared/db/timeout.js';
import { GatewayError } from '../../shared/http/errors.js';
import { rowsOf } from '../../shared/db/rows.js';
import type { BackgroundRow, BackgroundSettings, BackgroundStatus, QueuedJob } from './background-types.js';
import { responseIdKind } from './ids.js';

type Json = Record<string, unknown>;

/** What a running job used so far (`BackgroundStore.generated`). */
export interface GeneratedSoFar {
  promptTokens: number | null;
  tokens: number;
  cachedTokens: number;
  reasoningTokens: number;
}

export type {
  AdmittedCharge,
  BackgroundRequest,
  BackgroundRow,
  BackgroundSettings,
  BackgroundStatus,
  QueuedJob,
} from './background-types.js';

const DAY_MS = 86_400_000;
const RUNNING: BackgroundStatus[] = ['queued', 'in_progress'];

/**
 * Background responses in the gateway's database, so that any replica reads, cancels and resumes
 * them, and takes over a job whose replica died: a job is claimed with a lease (`claimed_by`,
 * `lease_until`) its replica renews while it runs, on the database's clock (`shared/db/lease.ts`,
 * as batches and the platform's runs are). Every read by a client names the organization: another
 * organization's job is `null`.
 */
export class BackgroundStore {
  /** A job's lease, held by the replica running it. */
  private readonly lease: Lease<typeof backgroundResponses>;

  constructor(
    private readonly db: Database,
    readonly settings: BackgroundSettings,
  ) {
    this.lease = new Lease(db, backgroundResponses, backgroundResponses.id, settings.backgroundLeaseMs);
  }

  /**
   * Queues a job claimed by `replica`, unless its organization has
   * TOLLGATE_RESPONSES_MAX_BACKGROUND queued or running already (a 429 naming the setting). The
   * count and the insert are one statement.
   */
  async enqueue(job: QueuedJob, replica: string): Promise<void> {
    const { maxBackground, retentionDays } = this.settings;
    const now = new Date();
    const values = {
      id: job.id,
      orgId: job.orgId,
      keyId: job.keyId,
      keyHash: job.keyHash,
      requestId: job.requestId,
      request: JSON.stringify(job.request),
      status: 'queued' as const,
      response: JSON.stringify(job.response),
      streamed: job.streamed,
      claimedBy: replica,
      createdAt: now,
      expiresAt: new Date(now.getTime() + retentionDays * DAY_MS),
    };
    const inserted = await bounded(
      this.db.execute(sql`
        insert into background_responses
          (id, org_id, key_id, key_hash, request_id, request_json, status, response_json, streamed,
           claimed_by, lease_until, created_at, expires_at)
        select ${values.id}, ${values.orgId}, ${values.keyId}, ${values.keyHash}, ${values.requestId},
          ${values.request}, 'queued', ${values.response}, ${values.streamed}, ${values.claimedBy},
          ${this.lease.deadline()}, ${values.createdAt.toISOString()}::timestamptz,
          ${values.expiresAt.toISOString()}::timestamptz
        where (select count(*) from background_responses
               where org_id = ${values.orgId} and status in ('queued', 'in_progress')) < ${maxBackground}
        returning id`),
    );
    if (rowsOf(inserted).length === 0)
      throw new GatewayError(
        'rate_limit_exceeded',
        `Your organization has ${maxBackground} background responses queued or running, the most the gateway ` +
          `runs at once for one organization (TOLLGATE_RESPONSES_MAX_BACKGROUND). Retry once one has finished.`,
        { headers: { 'Retry-After': '5' } },
      );
  }

  /** The organization's job, or null (unknown, expired or another organization's). */
  async get(orgId: string, id: string): Promise<BackgroundRow | null> {
    if (responseIdKind(id) !== 'ours') return null;
    const [row] = await bounded(
      this.db
        .select()
        .from(backgroundResponses)
        .where(
          and(
            eq(backgroundResponses.id, id),
            eq(backgroundResponses.orgId, orgId),
            gt(backgroundResponses.expiresAt, new Date()),
          ),
        ),
    );
    return row ?? null;
  }

  /** How many of the organization's jobs are queued or running. */
  async active(orgId: string): Promise<number> {
    const [row] = await bounded(
      this.db
        .select({ n: count() })
        .from(backgroundResponses)
        .where(and(eq(backgroundResponses.orgId, orgId), inArray(backgroundResponses.status, RUNNING))),
    );
    return row?.n ?? 0;
  }

  /**
   * Marks a job as sent to the engine (`in_progress`): from now on it is never run again, only
   * billed.
   */
  async reachedEngine(id: string, replica: string, response: Json, promptTokens: number): Promise<boolean> {
    const rows = await bounded(
      this.db
        .update(backgroundResponses)
        .set({ status: 'in_progress', reachedEngine: true, response: JSON.stringify(response), promptTokens })
        .where(and(eq(backgroundResponses.id, id), eq(backgroundResponses.claimedBy, replica)))
        .returning({ id: backgroundResponses.id }),
    );
    return rows.length > 0;
  }

  /**
   * What it used so far, for a replica that bills it after this one died: the tokens generated, and
   * the prompt as the engine counted it (null: none yet, `reachedEngine`'s estimate stays), with
   * the cached and reasoning tokens it reported among them.
   */
  async generated(id: string, replica: string, used: GeneratedSoFar): Promise<void> {
    const counted =
      used.promptTokens === null
        ? {}
        : { promptTokens: used.promptTokens, cachedTokens: used.cachedTokens, reasoningTokens: used.reasoningTokens };
    await bounded(
      this.db
        .update(backgroundResponses)
        .set({ generatedTokens: used.tokens, ...counted })
        .where(and(eq(backgroundResponses.id, id), eq(backgroundResponses.claimedBy, replica))),
    );
  }

  /** Renews `replica`'s leases; answers which of them were asked to cancel. */
  async renew(replica: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const where = and(inArray(backgroundResponses.id, ids), inArray(backgroundResponses.status, RUNNING))!;
    const rows = await bounded(
      this.lease.renew(replica, where, { id: backgroundResponses.id, cancel: backgroundResponses.cancelRequested }),
    );
    return rows.filter((row) => row.cancel).map((row) => row.id);
  }

  /**
   * Claims for `replica` the jobs whose replica's lease ran out on the database's clock (it died,
   * or stopped without finishing them): one replica takes each.
   */
  claimExpired(replica: string, limit = 20): Promise<BackgroundRow[]> {
    return bounded(
      this.lease.takeOver(replica, {
        where: inArray(backgroundResponses.status, RUNNING),
        order: backgroundResponses.createdAt,
        limit,
      }),
    );
  }

  /** Records how a job ended; false when `replica` no longer held it. */
  async finish(id: string, replica: string, status: BackgroundStatus, response: Json): Promise<boolean> {
    const rows = await bounded(
      this.db
        .update(backgroundResponses)
        .set({ status, response: JSON.stringify(response), leaseUntil: null })
        .where(
          and(
            eq(backgroundResponses.id, id),
            eq(backgroundResponses.claimedBy, replica),
            inArray(backgroundResponses.status, RUNNING),
          ),
        )
        .returning({ id: backgroundResponses.id }),
    );
    return rows.length > 0;
  }

  /** Asks the replica running it to stop (it reads this when it renews its lease). */
  async requestCancel(orgId: string, id: string): Promise<void> {
    await bounded(
      this.db
        .update(backgroundResponses)
        .set({ cancelRequested: true })
        .where(
          and(
            eq(backgroundResponses.id, id),
            eq(backgroundResponses.orgId, orgId),
            inArray(backgroundResponses.status, RUNNING),
          ),
        ),
    );
  }

  /**
   * Keeps a streamed job's events (each `[sequence_number, event]`), up to
   * TOLLGATE_RESPONSES_BACKGROUND_MAX_EVENTS.
   */
  async appendEvents(id: string, events: Array<[number, string]>): Promise<void> {
    const kept = events.filter(([sequence]) => sequence < this.settings.backgroundMaxEvents);
    if (kept.length === 0) return;
    const rows = kept.map(([sequenceNumber, event]) => ({ responseId: id, sequenceNumber, event }));
    await bounded(this.db.insert(backgroundResponseEvents).values(rows).onConflictDoNothing());
  }

  /** A job's kept events after `after` (its `sequence_number`), at most `limit`, in order. */
  async eventsAfter(id: string, after: number, limit = 500): Promise<Array<{ sequence: number; event: string }>> {
    return bounded(
      this.db
        .select({ sequence: backgroundResponseEvents.sequenceNumber, event: backgroundResponseEvents.event })
        .from(backgroundResponseEvents)
        .where(and(eq(backgroundResponseEvents.responseId, id), gt(backgroundResponseEvents.sequenceNumber, after)))
        .orderBy(asc(backgroundResponseEvents.sequenceNumber))
        .limit(limit),
    );
  }

  /** The `sequence_number` of a job's last kept event; -1 when none is kept. */
  async lastSequence(id: string): Promise<number> {
    const events = backgroundResponseEvents;
    const last = sql<number | null>`max(${events.sequenceNumber})`;
    const [row] = await bounded(this.db.select({ last }).from(events).where(eq(events.responseId, id)));
    return Number(row?.last ?? -1);
  }

  /** Deletes a job (`DELETE /v1/responses/{id}`), its events with it. */
  async delete(orgId: string, id: string): Promise<boolean> {
    if (responseIdKind(id) !== 'ours') return false;
    const rows = await bounded(
      this.db
        .delete(backgroundResponses)
        .where(and(eq(backgroundResponses.id, id), eq(backgroundResponses.orgId, orgId)))
        .returning({ id: backgroundResponses.id }),
    );
    return rows.length > 0;
  }

  /** Deletes the finished jobs past the retention; the number deleted. */
  async purgeExpired(now: Date): Promise<number> {
    const rows = await bounded(
      this.db
        .delete(backgroundResponses)
        .where(and(lt(backgroundResponses.expiresAt, now), sql`status not in ('queued', 'in_progress')`))
        .returning({ id: backgroundResponses.id }),
    );
    return rows.length;
  }
}

/**
 * Within the store's timeout; a database that fails or does not answer is a 503
 * `responses_unavailable`.
 */
function bounded<T>(work: PromiseLike<T>): Promise<T> {
  return withinStoreOr503(work, 'responses_unavailable', 'The gateway cannot read or write responses right now.');
}
