import { bigint, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { organizations } from './accounts-schema.js';

/**
 * Conversations (`/v1/conversations`, and `conversation` on `/v1/responses`), each
 * organization's own. `next_position` is where the next item goes: an append moves it
 * in the one `update` that also checks the bounds, so two turns appended at once on
 * two replicas wait for each other's row lock and never take the same position.
 * `items` and `bytes` count what is stored (TOLLGATE_CONVERSATIONS_MAX_ITEMS and
 * _MAX_BYTES). A conversation is gone for reads once `expires_at` is past
 * (TOLLGATE_CONVERSATIONS_RETENTION_DAYS after its last change) and purged later.
 */
export const conversations = pgTable(
  'conversations',
  {
    id: text('id').primaryKey(),
    orgId: text('org_id')
      .notNull()
      .references(() => organizations.id),
    metadata: text('metadata_json').notNull(),
    items: integer('items').notNull().default(0),
    bytes: bigint('bytes', { mode: 'number' }).notNull().default(0),
    nextPosition: bigint('next_position', { mode: 'number' }).notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [index('conversations_org_idx').on(t.orgId), index('conversations_expiry_idx').on(t.expiresAt)],
);

/**
 * A conversation's items in order (`position`, never reused). `item_id` is not unique: a
 * client may send an item with an id it has sent before; a read or delete by id names all of them.
 */
export const conversationItems = pgTable(
  'conversation_items',
  {
    conversationId: text('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    position: bigint('position', { mode: 'number' }).notNull(),
    itemId: text('item_id').notNull(),
    item: text('item_json').notNull(),
    bytes: integer('bytes').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.conversationId, t.position] }),
    index('conversation_items_id_idx').on(t.conversationId, t.itemId),
  ],
);

/**
 * How many live conversations each organization has (TOLLGATE_CONVERSATIONS_ORG_MAX), moved with
 * its rows.
 */
export const conversationTotals = pgTable('conversation_totals', {
  orgId: text('org_id')
    .primaryKey()
    .references(() => organizations.id),
  conversations: integer('conversations').notNull().default(0),
});
