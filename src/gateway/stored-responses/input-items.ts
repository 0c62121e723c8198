import { randomUUID } from 'node:crypto';
import { type SQL, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { storedResponseInputItems, storedResponses } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import type { SaveItem } from './group-save.js';
import { rowsOf } from '../../shared/db/rows.js';
import { keptInputItem } from './kept.js';
import type { InputItemsPage, InputItemsQuery } from './store.js';

type Json = Record<string, unknown>;

/**
 * An item id the store keeps as the client gave it: what ids are made of, no longer than the routes
 * take.
 */
const ITEM_ID = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * A turn's input items as their rows: only what `kept.ts` keeps, each under
 * its own id when that is one (`ITEM_ID`, its first use in the input), else
 * under a new one, so `after` and `before` name exactly one item.
 */
export function itemRowsOf(input: Json[]): SaveItem[] {
  const rows: SaveItem[] = [];
  const seen = new Set<string>();
  for (const item of input) {
    const kept = keptInputItem(item);
    if (!kept) continue;
    let itemId = typeof kept.id === 'string' ? kept.id : '';
    if (!ITEM_ID.test(itemId) || seen.has(itemId)) itemId = `item_${randomUUID().replaceAll('-', '')}`;
    seen.add(itemId);
    // The id first, as OpenAI lists an item.
    const row = Object.assign({ id: itemId }, kept, { id: itemId });
    rows.push({ position: rows.length, itemId, json: JSON.stringify(row) });
  }
  return rows;
}

/** Whether `value` can be an `after` or `before` of input_items: an id of the shape the store keeps. */
export function isItemId(value: string): boolean {
  return ITEM_ID.test(value);
}

/**
 * One page of a response's input items, read by one statement that touches
 * the page's rows only (and one more row's position, for `has_more`): the
 * response's row (its organization, its expiry), the cursors' positions by
 * their unique index, then at most `limit + 1` items in order. Null when the
 * response is not there for `orgId`.
 */
export async function readInputItemsPage(
  db: Database,
  orgId: string,
  id: string,
  query: InputItemsQuery,
): Promise<InputItemsPage | null> {
  const items = storedResponseInputItems;
  const positionOf = (itemId: string) =>
    sql`(select c.position from ${items} c where c.response_id = r.id and c.item_id = ${itemId})`;
  // `before` alone reads backwards from its cursor, then the page is turned back into the list's
  // order.
  const backwards = query.before !== undefined && query.after === undefined;
  const ascending = (query.order === 'asc') !== backwards;
  const bounds: SQL[] = [sql`i.response_id = r.id`];
  const [forward, backward] = query.order === 'asc' ? [sql`>`, sql`<`] : [sql`<`, sql`>`];
  if (query.after !== undefined) bounds.push(sql`i.position ${forward} ${positionOf(query.after)}`);
  if (query.before !== undefined) bounds.push(sql`i.position ${backward} ${positionOf(query.before)}`);
  const direction = ascending ? sql`asc` : sql`desc`;
  // The page's rows only: the inner `limit` stops the index scan; the row past the page says
  // `has_more`, its text unread.
  const result = await db.execute(sql`
    select r.id as found,
      ${query.after === undefined ? sql`0` : positionOf(query.after)} as after_position,
      ${query.before === undefined ? sql`0` : positionOf(query.before)} as before_position,
      page.item_id,
      case when row_number() over (order by page.position ${direction}) <= ${query.limit} then page.item_json end
        as item_json
    from ${storedResponses} r
    left join lateral (
      select i.position, i.item_id, i.item_json from ${items} i where ${sql.join(bounds, sql` and `)}
      order by i.position ${direction} limit ${query.limit + 1}
    ) page on true
    where r.id = ${id} and r.org_id = ${orgId} and r.expires_at > now()
    order by page.position ${direction}`);
  type Row = { after_position: unknown; before_position: unknown; item_id: string | null; item_json: string | null };
  const rows = rowsOf<Row>(result);
  const [first] = rows;
  if (!first) return null;
  if (first.after_position === null) throw unknownCursor('after');
  if (first.before_position === null) throw unknownCursor('before');
  const page = rows.filter((row) => row.item_json !== null);
  if (backwards) page.reverse();
  return {
    data: page.map((row) => JSON.parse(row.item_json!) as Json),
    firstId: page[0]?.item_id ?? null,
    lastId: page.at(-1)?.item_id ?? null,
    hasMore: rows.filter((row) => row.item_id !== null).length > query.limit,
  };
}

function unknownCursor(field: 'after' | 'before'): GatewayError {
  return new GatewayError('invalid_request', `${field}: no input item with this id in this response.`, {
    details: [{ field, message: 'not an input item of this response' }],
  });
}
