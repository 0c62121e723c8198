import { sql } from 'drizzle-orm';
import { withinStoreTimeout } from '../../shared/db/timeout.js';
import type { Database } from '../../shared/db/client.js';
import { storedResponseInputItems, storedResponses, storedResponseTotals } from '../../shared/db/schema.js';
import { rowsOf } from '../../shared/db/rows.js';

/**
 * An input item as its row is written: its place in the input, its id (unique in its response), its
 * JSON text.
 */
export interface SaveItem {
  position: number;
  itemId: string;
  json: string;
}

/**
 * A stored response as its rows are written: its response (without `output`) and output already
 * JSON text.
 */
export interface SaveRow {
  id: string;
  orgId: string;
  keyId: string;
  model: string;
  previousResponseId: string | null;
  items: SaveItem[];
  response: string;
  output: string;
  bytes: number;
  createdAt: Date;
  expiresAt: Date;
}

/**
 * What `GroupSave.save` says of a row: stored, or refused because its organization's total would
 * pass the bound.
 */
export type SaveOutcome = 'stored' | 'over the organization bound';

/**
 * Rows written by one statement at most, and their bytes at most (a row alone may pass it:
 * TOLLGATE_RESPONSES_MAX_BYTES bounds that).
 */
const MAX_GROUP_ROWS = 256;
const MAX_GROUP_BYTES = 16 * 1024 * 1024;

interface Waiting {
  row: SaveRow;
  done: (outcome: SaveOutcome | Error) => void;
}

/**
 * Writes stored responses in groups: one statement, so one commit, for the
 * responses that finish close together. A statement's fixed cost is most of
 * a small save's (in the embedded PGlite about 1 ms of CPU for a row alone,
 * 0.15 ms a row in a group of 32), so a busy gateway that wrote each alone
 * spent more CPU on it than on the stream itself (docs/benchmark.md).
 *
 * A save resolves once its row is committed, so the response's last event
 * still follows its commit and any replica reads it at once. A save waits for
 * others only while saves arrive closer together than `waitMs` allows to
 * gather (a moving average of their gaps); a lone save, or one on a quiet
 * gateway, is written at once. Saves that arrive while a statement runs go
 * out together in the next.
 *
 * @example
 * const group = new GroupSave(db, { orgMaxBytes, waitMs: 10 });
 * await group.save(row); // 'stored', or 'over the organization bound'
 */
export class GroupSave {
  private queue: Waiting[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing = false;
  private lastArrival = Number.NEGATIVE_INFINITY;
  /** The moving average of the gaps between saves, in ms. */
  private gapMs = Number.POSITIVE_INFINITY;

  constructor(
    private readonly db: Database,
    private readonly settings: { orgMaxBytes: number; waitMs: number; timeoutMs?: number },
  ) {}

  save(row: SaveRow): Promise<SaveOutcome> {
    const now = performance.now();
    const gap = now - this.lastArrival;
    this.lastArrival = now;
    this.gapMs = Number.isFinite(this.gapMs) ? 0.8 * this.gapMs + 0.2 * gap : gap;
    return new Promise((resolve, reject) => {
      this.queue.push({ row, done: (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)) });
      this.schedule();
    });
  }

  private schedule(): void {
    // A statement under way takes what waits when it ends.
    if (this.writing) return;
    // Wait only when at least two more saves are likely within the wait: else it would cost latency
    // for nothing.
    const othersLikely = this.settings.waitMs > 0 && this.gapMs * 2 < this.settings.waitMs;
    if (this.queue.length < MAX_GROUP_ROWS && othersLikely) {
      this.timer ??= setTimeout(() => void this.flush(), this.settings.waitMs);
      return;
    }
    void this.flush();
  }

  private async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.writing = true;
    while (this.queue.length > 0) {
      const group = this.queue.splice(0, this.groupLength());
      const stored = await this.insert(group.map((waiting) => waiting.row)).catch((error: unknown) => error as Error);
      // A row the group could not take (its organization's rows together pass the bound, or a row
      // the database refused, say for a key deleted meanwhile) is tried alone, in order: one
      // tenant's row never costs another's.
      for (const waiting of group) {
        if (stored instanceof Set && stored.has(waiting.row.id)) waiting.done('stored');
        else if (group.length === 1 || (stored instanceof Error && !refusedARow(stored)))
          waiting.done(stored instanceof Error ? stored : 'over the organization bound');
        else waiting.done(await this.insertAlone(waiting.row));
      }
    }
    this.writing = false;
  }

  /** How many of the waiting saves the next statement takes: at least one, then within both bounds. */
  private groupLength(): number {
    let bytes = this.queue[0]!.row.bytes;
    let length = 1;
    while (length < Math.min(this.queue.length, MAX_GROUP_ROWS)) {
      bytes += this.queue[length]!.row.bytes;
      if (bytes > MAX_GROUP_BYTES) break;
      length += 1;
    }
    return length;
  }

  private async insertAlone(row: SaveRow): Promise<SaveOutcome | Error> {
    try {
      return (await this.insert([row])).size > 0 ? 'stored' : 'over the organization bound';
    } catch (error) {
      return error as Error;
    }
  }

  /**
   * One statement: each organization's total moves by its rows' bytes only if it stays within the
   * bound (its row's lock orders concurrent writers, on every replica), and an organization's rows
   * are inserted only if it moved. The ids inserted.
   */
  private async insert(rows: SaveRow[]): Promise<Set<string>> {
    const { orgMaxBytes } = this.settings;
    // The rows as one JSON parameter: the statement's text is the same for any number of rows, and
    // the embedded PGlite's cost goes with the parameters' count and bytes (ten parameters a row
    // cost it a sixth more CPU). Each response's input items ride in it too, inserted only with
    // their response.
    const batch = JSON.stringify(rows.map(recordOf));
    // Bounded in time: a statement the database never answers fails its saves and lets the next
    // group go.
    const writing = this.db.execute(sql`
      with batch as (
        select * from json_to_recordset(${batch}::json) as b(id text, org_id text, key_id text, model text,
          previous_response_id text, response_json text, output_json text, bytes integer, created_at timestamptz,
          expires_at timestamptz, items json)
      ),
      sums as (select org_id, sum(bytes)::bigint as bytes from batch group by org_id),
      total as (
        insert into ${storedResponseTotals} (org_id, bytes) select org_id, bytes from sums where bytes <= ${orgMaxBytes}::bigint
        on conflict (org_id) do update set bytes = ${storedResponseTotals}.bytes + excluded.bytes
          where ${storedResponseTotals}.bytes + excluded.bytes <= ${orgMaxBytes}::bigint
        returning org_id
      ),
      saved as (
        insert into ${storedResponses} (id, org_id, key_id, model, previous_response_id, response_json, output_json, bytes,
          created_at, expires_at)
        select batch.id, batch.org_id, batch.key_id, batch.model, batch.previous_response_id, batch.response_json,
          batch.output_json, batch.bytes, batch.created_at, batch.expires_at
        from batch join total on total.org_id = batch.org_id
        returning id
      ),
      items as (
        insert into ${storedResponseInputItems} (response_id, position, item_id, item_json)
        select saved.id, item.position, item.item_id, item.item_json
        from saved join batch on batch.id = saved.id,
          json_to_recordset(batch.items) as item(position integer, item_id text, item_json text)
      )
      select id from saved`);
    const result = await withinStoreTimeout(writing, this.settings.timeoutMs);
    return new Set(rowsOf<{ id: string }>(result).map((row) => row.id));
  }
}

/**
 * A row as `json_to_recordset` reads it: the columns' names, the text already JSON (it holds no
 * NUL: JSON escapes one).
 */
function recordOf(row: SaveRow): Record<string, unknown> {
  return {
    id: row.id,
    org_id: row.orgId,
    key_id: row.keyId,
    model: row.model,
    previous_response_id: row.previousResponseId,
    response_json: row.response,
    output_json: row.output,
    bytes: row.bytes,
    created_at: row.createdAt.toISOString(),
    expires_at: row.expiresAt.toISOString(),
    items: row.items.map((item) => ({ position: item.position, item_id: item.itemId, item_json: item.json })),
  };
}

/**
 * The database refused a row's data (SQLSTATE class 22, data exception, or 23, integrity constraint
 * violation), not the statement as a whole: the group's other rows may still go in. Drizzle puts
 * the driver's error in `cause`.
 */
function refusedARow(error: Error): boolean {
  const code = (error.cause as { code?: unknown } | undefined)?.code ?? (error as { code?: unknown }).code;
  return typeof code === 'string' && /^2[23]/.test(code);
}
