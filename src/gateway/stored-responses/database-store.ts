import { and, eq, gt, inArray, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { storedResponses, storedResponseTotals } from '../../shared/db/schema.js';
import { STORE_TIMEOUT_MS, withinStoreOr503 } from '../../shared/db/timeout.js';
import { GatewayError } from '../../shared/http/errors.js';
import { readChain } from './chain.js';
import { GroupSave, type SaveRow } from './group-save.js';
import { rowsOf } from '../../shared/db/rows.js';
import { malformedId, previousResponseNotFound, responseIdKind } from './ids.js';
import { isItemId, itemRowsOf, readInputItemsPage } from './input-items.js';
import { keptResponse } from './kept.js';
import { readReferencedItems } from './references.js';
import type { ConversationTurn, InputItemsPage, InputItemsQuery, ResponseStore, StoredResponse } from './store.js';

type Json = Record<string, unknown>;

/** What bounds the store: `config.responses` (TOLLGATE_RESPONSES_*). */
export interface ResponseStoreSettings {
  retentionDays: number;
  maxBytes: number;
  orgMaxBytes: number;
  chainMaxTurns: number;
  chainMaxBytes: number;
  /** How long a save may wait for others to be written with it (TOLLGATE_RESPONSES_SAVE_WAIT_MS). */
  waitMs: number;
  /**
   * How long a statement may take before the store answers 503 (STORE_TIMEOUT_MS unless a test
   * says).
   */
  timeoutMs?: number;
}

const DAY_MS = 86_400_000;
/**
 * Expired responses deleted per transaction, at most, and their bytes at most (their input items go
 * with them): a purge after a long pause never holds one long transaction. One response past the
 * bytes is still deleted alone.
 */
const PURGE_BATCH = 1000;
const PURGE_BATCH_BYTES = 16 * 1024 * 1024;

/**
 * Stored Responses in the gateway's database (PostgreSQL or PGlite), so that
 * every gateway process reads what any of them stored. A row past its
 * `expires_at` is gone for every read at once; `purgeExpired` (a loop of
 * `server/loops.ts`) frees its space later.
 *
 * A conversation is its turns linked by `previous_response_id`, each turn
 * holding its own input and output. Deleting a turn (or its expiry) leaves the
 * later turns readable and continuable: a chain through it ends there, with
 * the turns after it, as a conversation whose oldest turns have gone.
 *
 * @example
 * const store = new DatabaseResponseStore(db, config.responses);
 * const turns = await store.chain(orgId, 'resp_…'); // oldest first, or null
 */
export class DatabaseResponseStore implements ResponseStore {
  /** Where saves wait to be written together (`group-save.ts`). */
  private readonly group: GroupSave;
  /**
   * Chain reads under way, by organization and id: parallel continuations of one conversation share
   * one read.
   */
  private readonly chainsInFlight = new Map<string, Promise<ConversationTurn[] | null>>();
  private readonly timeoutMs: number;

  constructor(
    private readonly db: Database,
    private readonly settings: ResponseStoreSettings,
  ) {
    this.timeoutMs = settings.timeoutMs ?? STORE_TIMEOUT_MS;
    this.group = new GroupSave(db, {
      orgMaxBytes: settings.orgMaxBytes,
      waitMs: settings.waitMs,
      timeoutMs: this.timeoutMs,
    });
  }

  async save(stored: StoredResponse): Promise<void> {
    const { items, response, output, bytes } = storedForm(stored);
    const { maxBytes, orgMaxBytes, retentionDays } = this.settings;
    if (bytes > maxBytes)
      throw sizeRefusal(
        `This response and its input are ${bytes} bytes as JSON, more than the gateway stores for one response`,
        `TOLLGATE_RESPONSES_MAX_BYTES=${maxBytes}`,
      );
    const expiresAt = new Date(stored.createdAt.getTime() + retentionDays * DAY_MS);
    const { id, orgId, keyId, model, previousResponseId, createdAt } = stored;
    const row = { id, orgId, keyId, model, previousResponseId, items, response, output, bytes, createdAt, expiresAt };
    const outcome = await this.bounded(() => this.group.save(row));
    if (outcome !== 'stored') {
      throw sizeRefusal(
        `Your organization's stored responses would be more than the gateway keeps for one organization`,
        `TOLLGATE_RESPONSES_ORG_MAX_BYTES=${orgMaxBytes}`,
      );
    }
  }

  async get(orgId: string, id: string): Promise<Json | null> {
    if (!ours(id)) return null;
    const [row] = await this.bounded(() =>
      this.db
        .select({ response: storedResponses.response, output: storedResponses.output })
        .from(storedResponses)
        .where(live(orgId, id)),
    );
    if (!row) return null;
    const response = JSON.parse(row.response) as Json;
    // Null only for a response stored before output_json existed, whose output is still inside it
    // (see the schema).
    if (row.output !== null) response.output = JSON.parse(row.output) as unknown;
    return response;
  }

  chain(orgId: string, id: string): Promise<ConversationTurn[] | null> {
    if (responseIdKind(id) === 'malformed') return Promise.reject(malformedId('previous_response_id'));
    if (responseIdKind(id) === 'foreign') return Promise.reject(previousResponseNotFound(id));
    const key = `${orgId}\n${id}`;
    let reading = this.chainsInFlight.get(key);
    if (!reading) {
      reading = this.bounded(() => readChain(this.db, orgId, id, this.settings));
      this.chainsInFlight.set(key, reading);
      const forget = () => this.chainsInFlight.delete(key);
      reading.then(forget, forget);
    }
    return reading;
  }

  referencedItems(orgId: string, ids: string[]): Promise<Map<string, Json>> {
    return this.bounded(() => readReferencedItems(this.db, orgId, ids));
  }

  async delete(orgId: string, id: string): Promise<boolean> {
    if (!ours(id)) return false;
    return this.bounded(() =>
      this.db.transaction(async (tx) => {
        const deleted = await tx
          .delete(storedResponses)
          .where(live(orgId, id))
          .returning({ orgId: storedResponses.orgId, bytes: storedResponses.bytes });
        await subtractTotals(tx, deleted);
        return deleted.length > 0;
      }),
    );
  }

  async inputItems(orgId: string, id: string, page: InputItemsQuery): Promise<InputItemsPage | null> {
    if (!ours(id)) return null;
    // A cursor no item can have names none: 400, as an unknown one.
    for (const field of ['after', 'before'] as const) {
      const cursor = page[field];
      if (cursor !== undefined && !isItemId(cursor))
        throw new GatewayError('invalid_request', `${field} must be the id of an input item.`, {
          details: [{ field, message: 'not an input item id' }],
        });
    }
    return this.bounded(() => readInputItemsPage(this.db, orgId, id, page));
  }

  async purgeExpired(now: Date): Promise<number> {
    let purged = 0;
    for (;;) {
      const deleted = await this.bounded(() => purgeBatch(this.db, now));
      purged += deleted;
      if (deleted === 0) return purged;
    }
  }

  /**
   * `work` within the store's timeout; a failure of the database (or no answer) as a 503 the client
   * can retry. The statement may still run on: what the store writes is one statement, done or not.
   */
  private bounded<T>(work: () => Promise<T>): Promise<T> {
    return withinStoreOr503(
      work(),
      'responses_unavailable',
      'The gateway cannot read or write stored responses right now.',
      this.timeoutMs,
    );
  }
}

/**
 * A response as its rows hold it: the input items `kept.ts` keeps, the response without its output
 * (`null` keeps the field's place) and the output apart, and their bytes, which every bound counts.
 */
export function storedForm(stored: StoredResponse): Pick<SaveRow, 'items' | 'response' | 'output' | 'bytes'> {
  const items = itemRowsOf(stored.input);
  const output = JSON.stringify(stored.response.output ?? []);
  const response = JSON.stringify(Object.assign(keptResponse(stored.response), { output: null }));
  let bytes = Buffer.byteLength(response) + Buffer.byteLength(output);
  for (const item of items) bytes += Buffer.byteLength(item.json);
  return { items, response, output, bytes };
}

/** The organization's response `id`, unless it has expired. */
function live(orgId: string, id: string) {
  return and(eq(storedResponses.id, id), eq(storedResponses.orgId, orgId), gt(storedResponses.expiresAt, sql`now()`));
}

/**
 * Whether a path's response id may be stored: false for one the gateway cannot have made, a 400 for
 * a malformed one.
 */
function ours(id: string): boolean {
  const kind = responseIdKind(id);
  if (kind === 'malformed') throw malformedId('response_id');
  return kind === 'ours';
}

/**
 * Deletes one batch of expired responses (their input items by the foreign key's cascade); the
 * number deleted.
 */
async function purgeBatch(db: Database, now: Date): Promise<number> {
  return db.transaction(async (tx) => {
    const due = await tx.execute(sql`
      select id from (
        select id, bytes, sum(bytes) over (order by expires_at, id) as running from ${storedResponses}
         where expires_at <= ${now.toISOString()}::timestamptz order by expires_at, id limit ${PURGE_BATCH}
      ) due where running - bytes < ${PURGE_BATCH_BYTES}`);
    const ids = rowsOf<{ id: string }>(due).map((row) => row.id);
    if (ids.length === 0) return 0;
    const rows = await tx
      .delete(storedResponses)
      .where(inArray(storedResponses.id, ids))
      .returning({ orgId: storedResponses.orgId, bytes: storedResponses.bytes });
    await subtractTotals(tx, rows);
    return rows.length;
  });
}

type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/** Takes deleted rows' bytes off their organizations' totals, one update per organization. */
async function subtractTotals(tx: Transaction, deleted: Array<{ orgId: string; bytes: number }>): Promise<void> {
  const byOrg = new Map<string, number>();
  for (const row of deleted) byOrg.set(row.orgId, (byOrg.get(row.orgId) ?? 0) + row.bytes);
  for (const [orgId, bytes] of byOrg) {
    await tx
      .update(storedResponseTotals)
      .set({ bytes: sql`greatest(${storedResponseTotals.bytes} - ${bytes}, 0)` })
      .where(eq(storedResponseTotals.orgId, orgId));
  }
}

function sizeRefusal(what: string, setting: string): GatewayError {
  return new GatewayError('invalid_request', `${what} (${setting}); send it with "store": false.`, {
    details: [{ field: 'store', message: `more than ${setting.split('=')[0]} allows` }],
  });
}
