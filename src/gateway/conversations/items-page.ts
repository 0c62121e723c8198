import { sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { conversationItems, conversations } from '../../shared/db/schema.js';
import { GatewayError } from '../../shared/http/errors.js';
import { rowsOf } from '../../shared/db/rows.js';
import type { ConversationItemsPage, ConversationItemsQuery } from './store.js';

type Json = Record<string, unknown>;

/**
 * One page of a conversation's items in one statement: the conversation's row
 * (its organization, its expiry), the `after` cursor's position, then at most
 * `limit + 1` items in order (the one past the page says `has_more`, its text
 * unread). Null when the conversation is not there for `orgId`.
 */
export async function readItemsPage(
  db: Database,
  orgId: string,
  id: string,
  query: ConversationItemsQuery,
): Promise<ConversationItemsPage | null> {
  const items = conversationItems;
  // An id sent twice: the cursor is its latest item.
  const cursor =
    query.after === undefined
      ? sql`0`
      : sql`(select max(c.position) from ${items} c where c.conversation_id = v.id and c.item_id = ${query.after})`;
  const direction = query.order === 'asc' ? sql`asc` : sql`desc`;
  const past =
    query.after === undefined ? sql`` : sql` and i.position ${query.order === 'asc' ? sql`>` : sql`<`} ${cursor}`;
  const result = await db.execute(sql`
    select ${cursor} as after_position, page.item_id,
      case when row_number() over (order by page.position ${direction}) <= ${query.limit} then page.item_json end
        as item_json
    from ${conversations} v
    left join lateral (
      select i.position, i.item_id, i.item_json from ${items} i where i.conversation_id = v.id${past}
      order by i.position ${direction} limit ${query.limit + 1}
    ) page on true
    where v.id = ${id} and v.org_id = ${orgId} and v.expires_at > now()
    order by page.position ${direction}`);
  type Row = { after_position: unknown; item_id: string | null; item_json: string | null };
  const rows = rowsOf<Row>(result);
  const [first] = rows;
  if (!first) return null;
  if (first.after_position === null) throw unknownAfter();
  const page = rows.filter((row) => row.item_json !== null);
  return {
    data: page.map((row) => JSON.parse(row.item_json!) as Json),
    firstId: page[0]?.item_id ?? null,
    lastId: page.at(-1)?.item_id ?? null,
    hasMore: rows.filter((row) => row.item_id !== null).length > query.limit,
  };
}

/** The 400 of an `after` that no item of the conversation has. */
export function unknownAfter(): GatewayError {
  return new GatewayError('invalid_request', 'after: no item with this id in this conversation.', {
    details: [{ field: 'after', message: 'not an item of this conversation' }],
  });
}
