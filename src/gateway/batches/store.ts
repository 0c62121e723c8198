import { and, desc, eq, inArray, lt, or, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { batches, batchLines } from '../../shared/db/batches-schema.js';
import { Lease } from '../../shared/db/lease.js';
import { withinStoreOr503 } from '../../shared/db/timeout.js';
import { GatewayError } from '../../shared/http/errors.js';
import { keysetAfter, ownedBy } from '../keys/owned-rows.js';
import { rowsOf } from '../../shared/db/rows.js';
import { ACTIVE_STATUSES, type BatchOwner, type BatchRow, isBatchId } from './objects.js';

/** A batch as `POST /v1/batches` makes it. */
export interface NewBatch {
  id: string;
  owner: BatchOwner;
  keyId: string;
  keyHash: string;
  endpoint: string;
  inputFileId: string;
  metadata: Record<string, string> | null;
  expiresAt: Date;
}

/**
 * Batches' rows in the gateway's database (their lines are `line-store.ts`'s). Every read by a
 * client names the owner: another organization's or project's id is `null`. A batch is claimed
 * with a lease (`claimed_by`, `lease_until`) by the replica that reads its input or writes its
 * output, so two replicas never do either at once, and a dead one's work is taken over.
 */
export class BatchStore {
  /** A batch's lease, held by the replica that reads its input or writes its output. */
  private readonly lease: Lease<typeof batches>;

  constructor(
    private readonly db: Database,
    private readonly settings: { orgMax: number; leaseMs: number },
  ) {
    this.lease = new Lease(db, batches, batches.id, settings.leaseMs);
  }

  /** Makes the batch (`validating`), unless its organization has TOLLGATE_BATCHES_ORG_MAX active. */
  async create(batch: NewBatch): Promise<BatchRow> {
    const { orgMax } = this.settings;
    const active = sql.join(
      ACTIVE_STATUSES.map((status) => sql`${status}`),
      sql`, `,
    );
    const now = new Date().toISOString();
    const inserted = await bounded(
      this.db.execute(sql`
        insert into batches (id, org_id, project_id, key_id, key_hash, endpoint, input_file_id, completion_window,
          status, metadata, created_at, expires_at)
        select ${batch.id}, ${batch.owner.orgId}, ${batch.owner.projectId}, ${batch.keyId}, ${batch.keyHash},
          ${batch.endpoint}, ${batch.inputFileId}, '24h', 'validating',
          ${batch.metadata ? JSON.stringify(batch.metadata) : null}, ${now}::timestamptz,
          ${batch.expiresAt.toISOString()}::timestamptz
        where (select count(*) from batches where org_id = ${batch.owner.orgId} and status in (${active})) < ${orgMax}
        returning id`),
    );
    if (rowsOf(inserted).length === 0)
      throw new GatewayError(
        'rate_limit_exceeded',
        `Your organization has ${orgMax} batches in flight, the most the gateway runs at once for one ` +
          `organization (TOLLGATE_BATCHES_ORG_MAX). Retry once one has finished.`,
        { headers: { 'Retry-After': '60' } },
      );
    return (await this.byId(batch.id))!;
  }

  async get(owner: BatchOwner, id: string): Promise<BatchRow | null> {
    if (!isBatchId(id)) return null;
    const [row] = await bounded(
      this.db
        .select()
        .from(batches)
        .where(and(eq(batches.id, id), ownedBy(batches, owner))),
    );
    return row ?? null;
  }

  /** Any batch by id, for the runner (never a client's read). */
  async byId(id: string): Promise<BatchRow | null> {
    const [row] = await bounded(this.db.select().from(batches).where(eq(batches.id, id)));
    return row ?? null;
  }

  /** Batches by id, for the runner: the rows of the lines it claimed, read once for them all. */
  byIds(ids: string[]): Promise<BatchRow[]> {
    return ids.length === 0
      ? Promise.resolve([])
      : bounded(this.db.select().from(batches).where(inArray(batches.id, ids)));
  }

  /** A page of the owner's batches, newest first, after the batch `after`. */
  async list(owner: BatchOwner, page: { after?: string; limit: number }): Promise<{ rows: BatchRow[]; more: boolean }> {
    const conditions: SQL[] = [ownedBy(batches, owner)];
    if (page.after !== undefined) {
      const after = await this.get(owner, page.after);
      if (!after)
        throw new GatewayError('invalid_request', 'after names no batch of yours.', {
          details: [{ field: 'after', message: 'no such batch' }],
        });
      conditions.push(keysetAfter(batches, after.id, 'desc'));
    }
    const rows = await bounded(
      this.db
        .select()
        .from(batches)
        .where(and(...conditions))
        .orderBy(desc(batches.createdAt), desc(batches.id))
        .limit(page.limit + 1),
    );
    return { rows: rows.slice(0, page.limit), more: rows.length > page.limit };
  }

  /**
   * Asks a validating or running batch to stop (`cancelling`): its lines not yet run become error
   * lines, the running ones are aborted by their replicas. The row as it is now; null if not found.
   */
  async cancel(owner: BatchOwner, id: string): Promise<BatchRow | null> {
    if (!isBatchId(id)) return null;
    const now = new Date();
    await bounded(
      this.db
        .update(batches)
        .set({ status: 'cancelling', ending: 'cancelled', cancellingAt: now })
        .where(
          and(eq(batches.id, id), ownedBy(batches, owner), inArray(batches.status, ['validating', 'in_progress'])),
        ),
    );
    return this.get(owner, id);
  }

  /** Claims for `replica` a batch in `status` no replica holds (or whose holder's lease ran out). */
  async claim(replica: string, statuses: string[], extra?: SQL): Promise<BatchRow | null> {
    const [row] = await bounded(
      this.lease.claim(replica, {
        where: and(inArray(batches.status, statuses), this.lease.open(), extra)!,
        order: batches.createdAt,
      }),
    );
    return row ?? null;
  }

  /** Renews `replica`'s claim on a batch; false once it is no longer its. */
  async renew(id: string, replica: string): Promise<boolean> {
    const rows = await bounded(this.lease.renew(replica, eq(batches.id, id), { id: batches.id }));
    return rows.length > 0;
  }

  /** Sets fields of a batch `replica` holds, and keeps it; false once it is no longer its. */
  async renewAs(id: string, replica: string, fields: Partial<BatchRow>): Promise<boolean> {
    const rows = await bounded(
      this.db
        .update(batches)
        .set(fields)
        .where(and(eq(batches.id, id), eq(batches.claimedBy, replica)))
        .returning({ id: batches.id }),
    );
    return rows.length > 0;
  }

  /** Sets fields of a batch `replica` holds, and lets it go; false once it is no longer its. */
  async update(id: string, replica: string, fields: Partial<BatchRow>): Promise<boolean> {
    const rows = await bounded(
      this.lease.release(replica, eq(batches.id, id), { set: fields, fields: { id: batches.id } }),
    );
    return rows.length > 0;
  }

  /**
   * Ends validation: its lines counted (those already failed too), and `in_progress` unless it was
   * cancelled meanwhile; the claim let go. False once it is no longer `replica`'s.
   */
  async started(id: string, replica: string, total: number): Promise<boolean> {
    const rows = await bounded(
      this.db.execute(sql`
        update batches set total = ${total},
          failed = (select count(*) from batch_lines where batch_id = ${id} and status = 'failed'),
          status = case when status = 'validating' then 'in_progress' else status end,
          in_progress_at = now(), claimed_by = null, lease_until = null
        where id = ${id} and claimed_by = ${replica}
        returning id`),
    );
    return rowsOf(rows).length > 0;
  }

  /** Marks the batch's wallet as run dry (its lines not yet run are then failed). */
  async walletRanDry(id: string): Promise<void> {
    await bounded(this.db.update(batches).set({ walletDry: true }).where(eq(batches.id, id)));
  }

  /** Batches that stop running lines (cancelling, or their window passed), and why. */
  async stopping(): Promise<Array<{ id: string; ending: string; walletDry: boolean }>> {
    return bounded(
      this.db
        .select({ id: batches.id, ending: batches.ending, walletDry: batches.walletDry })
        .from(batches)
        .where(
          or(
            eq(batches.status, 'cancelling'),
            and(
              eq(batches.status, 'in_progress'),
              or(sql`${batches.ending} <> 'completed'`, eq(batches.walletDry, true)),
            ),
          ),
        ),
    );
  }

  /**
   * The batches whose window passed while they ran: `ending` set to `expired`, their lines not yet
   * run failed with `batch_expired`. How many.
   */
  async expireDue(): Promise<string[]> {
    const rows = await bounded(
      this.db
        .update(batches)
        .set({ ending: 'expired' })
        .where(
          and(
            inArray(batches.status, ['validating', 'in_progress']),
            eq(batches.ending, 'completed'),
            lt(batches.expiresAt, new Date()),
          ),
        )
        .returning({ id: batches.id, status: batches.status }),
    );
    // A batch still validating has no line to deliver: it expires as it is, once claimed.
    return rows.map((row) => row.id);
  }

  /** Which of `ids` no longer run their lines (cancelling, expired, or gone). */
  async stopped(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await bounded(
      this.db
        .select({ id: batches.id })
        .from(batches)
        .where(and(inArray(batches.id, ids), eq(batches.status, 'in_progress'), eq(batches.ending, 'completed'))),
    );
    const running = new Set(rows.map((row) => row.id));
    return new Set(ids.filter((id) => !running.has(id)));
  }

  /**
   * A batch whose lines are all done (or that stops: cancelling, expired), claimed for `replica` to
   * write its output.
   */
  claimFinished(replica: string): Promise<BatchRow | null> {
    const open = sql`not exists (select 1 from ${batchLines} l where l.batch_id = ${batches.id}
      and l.status in ('waiting', 'running'))`;
    return this.claim(replica, ['in_progress', 'cancelling', 'finalizing'], open);
  }
}

/**
 * Within the store's timeout; a database that fails or does not answer is a 503
 * `batches_unavailable` (the batches' rows failed, not the files': a client told
 * `files_unavailable` would look in the wrong place).
 */
export function bounded<T>(work: PromiseLike<T>): Promise<T> {
  return withinStoreOr503(work, 'batches_unavailable', 'The gateway cannot read or write batches right now.');
}
