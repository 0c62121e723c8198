import { and, eq, gt, inArray, lte, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { storedResponses, storedResponseTotals } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { GroupSave, rowsOf } from './group-save.js';
import type { InputItemsPage, ResponseStore, StoredResponse } from './store.js';

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
}

const DAY_MS = 86_400_000;
/** Expired rows deleted per statement: a purge after a long pause never holds one long transaction. */
const PURGE_BATCH = 1000;

type Row = typeof storedResponses.$inferSelect;

/**
 * Stored Responses in the gateway's database (PostgreSQL or PGlite), so that
 * every gateway process reads what any of them stored. A row past its
 * `expires_at` is gone for every read at once; `purgeExpired` (a loop of
 * `server/start.ts`) frees its space later.
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

  constructor(
    private readonly db: Database,
    private readonly settings: ResponseStoreSettings,
  ) {
    this.group = new GroupSave(db, settings);
  }

  async save(stored: StoredResponse): Promise<void> {
    const input = JSON.stringify(stored.input);
    const response = JSON.stringify(stored.response);
    const bytes = Buffer.byteLength(input) + Buffer.byteLength(response);
    const { maxBytes, orgMaxBytes, retentionDays } = this.settings;
    if (bytes > maxBytes)
      throw sizeRefusal(
        `This response and its input are ${bytes} bytes as JSON, more than the gateway stores for one response`,
        `TOLLGATE_RESPONSES_MAX_BYTES=${maxBytes}`,
      );
    const expiresAt = new Date(stored.createdAt.getTime() + retentionDays * DAY_MS);
    const { id, orgId, keyId, model, previousResponseId, createdAt } = stored;
    const row = { id, orgId, keyId, model, previousResponseId, input, response, bytes, createdAt, expiresAt };
    const outcome = await this.group.save(row);
    if (outcome !== 'stored') {
      throw sizeRefusal(
        `Your organization's stored responses would be more than the gateway keeps for one organization`,
        `TOLLGATE_RESPONSES_ORG_MAX_BYTES=${orgMaxBytes}`,
      );
    }
  }

  async get(orgId: string, id: string): Promise<StoredResponse | null> {
    const [row] = await this.db.select().from(storedResponses).where(live(orgId, id));
    return row ? storedOf(row) : null;
  }

  async chain(orgId: string, id: string): Promise<StoredResponse[] | null> {
    const { chainMaxTurns, chainMaxBytes } = this.settings;
    // Walks back from `id`, one turn past either bound at most, so a refusal never reads more than one turn too many.
    const result = await this.db.execute(sql`
      with recursive walk(id, previous_response_id, depth, total) as (
        select id, previous_response_id, 1, bytes::bigint from ${storedResponses}
         where id = ${id} and org_id = ${orgId} and expires_at > now()
        union all
        select r.id, r.previous_response_id, w.depth + 1, w.total + r.bytes
          from walk w join ${storedResponses} r on r.id = w.previous_response_id
         where r.org_id = ${orgId} and r.expires_at > now() and w.depth <= ${chainMaxTurns} and w.total <= ${chainMaxBytes}
      )
      select id, depth, total from walk order by depth desc`);
    const walked = rowsOf<{ id: string; depth: number | string; total: number | string | bigint }>(result);
    const [deepest] = walked;
    if (!deepest) return null;
    if (Number(deepest.depth) > chainMaxTurns)
      throw chainRefusal(`more than ${chainMaxTurns} turns`, `TOLLGATE_RESPONSES_CHAIN_MAX_TURNS=${chainMaxTurns}`);
    if (Number(deepest.total) > chainMaxBytes)
      throw chainRefusal(`more than ${chainMaxBytes} bytes`, `TOLLGATE_RESPONSES_CHAIN_MAX_BYTES=${chainMaxBytes}`);
    const rows = await this.db
      .select()
      .from(storedResponses)
      .where(
        and(
          eq(storedResponses.orgId, orgId),
          inArray(
            storedResponses.id,
            walked.map((turn) => turn.id),
          ),
        ),
      );
    const byId = new Map(rows.map((row) => [row.id, row]));
    // A turn deleted between the two reads ends the chain there, as if it had gone before.
    const turns: StoredResponse[] = [];
    for (const turn of walked) {
      const row = byId.get(turn.id);
      if (row) turns.push(storedOf(row));
      else turns.length = 0;
    }
    return turns.at(-1)?.id === id ? turns : null;
  }

  async delete(orgId: string, id: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const deleted = await tx
        .delete(storedResponses)
        .where(live(orgId, id))
        .returning({ orgId: storedResponses.orgId, bytes: storedResponses.bytes });
      await subtractTotals(tx, deleted);
      return deleted.length > 0;
    });
  }

  async inputItems(
    orgId: string,
    id: string,
    page: { after?: string; limit: number; order: 'asc' | 'desc' },
  ): Promise<InputItemsPage | null> {
    const [row] = await this.db.select({ input: storedResponses.input }).from(storedResponses).where(live(orgId, id));
    if (!row) return null;
    const items = JSON.parse(row.input) as Json[];
    if (page.order === 'desc') items.reverse();
    let start = 0;
    if (page.after !== undefined) {
      const at = items.findIndex((item) => item.id === page.after);
      if (at < 0)
        throw new GatewayError('invalid_request', `after: no input item \`${page.after}\` in this response.`, {
          details: [{ field: 'after', message: 'not an input item of this response' }],
        });
      start = at + 1;
    }
    const data = items.slice(start, start + page.limit);
    return {
      data,
      firstId: idOf(data[0]),
      lastId: idOf(data[data.length - 1]),
      hasMore: start + page.limit < items.length,
    };
  }

  async purgeExpired(now: Date): Promise<number> {
    let purged = 0;
    for (;;) {
      const deleted = await this.db.transaction(async (tx) => {
        const due = tx
          .select({ id: storedResponses.id })
          .from(storedResponses)
          .where(lte(storedResponses.expiresAt, now))
          .limit(PURGE_BATCH);
        const rows = await tx
          .delete(storedResponses)
          .where(inArray(storedResponses.id, due))
          .returning({ orgId: storedResponses.orgId, bytes: storedResponses.bytes });
        await subtractTotals(tx, rows);
        return rows.length;
      });
      purged += deleted;
      if (deleted < PURGE_BATCH) return purged;
    }
  }
}

/** The organization's response `id`, unless it has expired. */
function live(orgId: string, id: string) {
  return and(eq(storedResponses.id, id), eq(storedResponses.orgId, orgId), gt(storedResponses.expiresAt, sql`now()`));
}

function storedOf(row: Row): StoredResponse {
  return {
    id: row.id,
    orgId: row.orgId,
    keyId: row.keyId,
    model: row.model,
    createdAt: row.createdAt,
    previousResponseId: row.previousResponseId,
    input: JSON.parse(row.input) as Json[],
    response: JSON.parse(row.response) as Json,
  };
}

function idOf(item: Json | undefined): string | null {
  return typeof item?.id === 'string' ? item.id : null;
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

function chainRefusal(what: string, setting: string): GatewayError {
  return new GatewayError(
    'invalid_request',
    `The conversation before \`previous_response_id\` is ${what}, more than the gateway continues (${setting}); start a new one.`,
    {
      details: [{ field: 'previous_response_id', message: `the conversation is ${what}` }],
    },
  );
}
