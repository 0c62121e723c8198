import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Database } from '../../shared/db/client.js';
import { conversationItems, conversations, conversationTotals } from '../../shared/db/schema.js';
import { STORE_TIMEOUT_MS, withinStoreOr503 } from '../../shared/db/timeout.js';
import { rowsOf } from '../../shared/db/rows.js';
import { checkedItemId, conversationIdKind, newId } from './ids.js';
import { readItemsPage, unknownAfter } from './items-page.js';
import { live, objectOf, refusal, uncount } from './database-rows.js';
import type { ConversationItemsPage, ConversationItemsQuery, ConversationObject, ConversationStore } from './store.js';

type Json = Record<string, unknown>;
type Transaction = Parameters<Parameters<Database['transaction']>[0]>[0];

/** What bounds the store: `config.conversations` (TOLLGATE_CONVERSATIONS_*). */
export interface ConversationStoreSettings {
  retentionDays: number;
  orgMax: number;
  maxItems: number;
  maxBytes: number;
  /**
   * How long a statement may take before the store answers 503 (STORE_TIMEOUT_MS unless a test
   * says).
   */
  timeoutMs?: number;
}

/**
 * Expired conversations deleted per transaction, at most (their items go with them by the foreign
 * key).
 */
const PURGE_BATCH = 200;

/**
 * Conversations in the gateway's database (PostgreSQL or PGlite). An append is
 * one `update` of the conversation's row, which moves `next_position` and the
 * counts and checks the bounds, then the items' insert, in one transaction: the
 * row's lock orders appends to one conversation from any replica, so none is
 * lost and no two take one position. A conversation lives
 * TOLLGATE_CONVERSATIONS_RETENTION_DAYS after its last change.
 *
 * @example
 * const store = new DatabaseConversationStore(db, config.conversations);
 * const conversation = await store.create(orgId, { topic: 'demo' }, []);
 */
export class DatabaseConversationStore implements ConversationStore {
  private readonly timeoutMs: number;

  constructor(
    private readonly db: Database,
    private readonly settings: ConversationStoreSettings,
  ) {
    this.timeoutMs = settings.timeoutMs ?? STORE_TIMEOUT_MS;
  }

  create(orgId: string, metadata: Record<string, string>, items: Json[]): Promise<ConversationObject> {
    const { orgMax } = this.settings;
    const id = newId('conv');
    return this.bounded(() =>
      this.db.transaction(async (tx) => {
        const counted = await tx.execute(sql`
          insert into ${conversationTotals} (org_id, conversations) values (${orgId}, 1)
          on conflict (org_id) do update set conversations = ${conversationTotals}.conversations + 1
           where ${conversationTotals}.conversations < ${orgMax}
          returning conversations`);
        if (rowsOf(counted).length === 0)
          throw refusal(`Your organization has ${orgMax} conversations`, `TOLLGATE_CONVERSATIONS_ORG_MAX=${orgMax}`);
        const [row] = await tx
          .insert(conversations)
          .values({ id, orgId, metadata: JSON.stringify(metadata), createdAt: new Date(), expiresAt: this.expiry() })
          .returning();
        if (items.length > 0 && !(await this.append(tx, orgId, id, items, true))) throw new Error('lost its row');
        return objectOf(row!);
      }),
    );
  }

  async get(orgId: string, id: string): Promise<ConversationObject | null> {
    if (conversationIdKind(id) !== 'ours') return null;
    const [row] = await this.bounded(() => this.db.select().from(conversations).where(live(orgId, id)));
    return row ? objectOf(row) : null;
  }

  async update(orgId: string, id: string, metadata: Record<string, string>): Promise<ConversationObject | null> {
    if (conversationIdKind(id) !== 'ours') return null;
    const [row] = await this.bounded(() =>
      this.db
        .update(conversations)
        .set({ metadata: JSON.stringify(metadata), expiresAt: this.expiry() })
        .where(live(orgId, id))
        .returning(),
    );
    return row ? objectOf(row) : null;
  }

  async delete(orgId: string, id: string): Promise<boolean> {
    if (conversationIdKind(id) !== 'ours') return false;
    return this.bounded(() =>
      this.db.transaction(async (tx) => {
        const deleted = await tx.delete(conversations).where(live(orgId, id)).returning({ orgId: conversations.orgId });
        await uncount(tx, deleted);
        return deleted.length > 0;
      }),
    );
  }

  async addItems(orgId: string, id: string, items: Json[]): Promise<Json[] | null> {
    if (conversationIdKind(id) !== 'ours') return null;
    const added = await this.bounded(() => this.db.transaction((tx) => this.append(tx, orgId, id, items, true)));
    return added ? items : null;
  }

  async listItems(orgId: string, id: string, query: ConversationItemsQuery): Promise<ConversationItemsPage | null> {
    if (conversationIdKind(id) !== 'ours') return null;
    if (query.after !== undefined && !checkedItemId(query.after, 'after')) throw unknownAfter();
    return this.bounded(() => readItemsPage(this.db, orgId, id, query));
  }

  async getItem(orgId: string, id: string, itemId: string): Promise<Json | null> {
    if (conversationIdKind(id) !== 'ours' || !checkedItemId(itemId, 'item_id')) return null;
    const result = await this.bounded(() =>
      this.db.execute(sql`
        select i.item_json from ${conversations} c join ${conversationItems} i on i.conversation_id = c.id
         where c.id = ${id} and c.org_id = ${orgId} and c.expires_at > now() and i.item_id = ${itemId}
         order by i.position desc limit 1`),
    );
    const [row] = rowsOf<{ item_json: string }>(result);
    return row ? (JSON.parse(row.item_json) as Json) : null;
  }

  async deleteItem(orgId: string, id: string, itemId: string): Promise<ConversationObject | null> {
    if (conversationIdKind(id) !== 'ours' || !checkedItemId(itemId, 'item_id')) return null;
    return this.bounded(() =>
      this.db.transaction(async (tx) => {
        // The conversation's row first: locked, so the counts move with the appends in order.
        const [row] = await tx.select().from(conversations).where(live(orgId, id)).for('update');
        if (!row) return null;
        const deleted = await tx
          .delete(conversationItems)
          .where(and(eq(conversationItems.conversationId, id), eq(conversationItems.itemId, itemId)))
          .returning({ bytes: conversationItems.bytes });
        if (deleted.length === 0) return null;
        const bytes = deleted.reduce((sum, item) => sum + item.bytes, 0);
        await tx
          .update(conversations)
          .set({
            items: sql`${conversations.items} - ${deleted.length}`,
            bytes: sql`${conversations.bytes} - ${bytes}`,
            expiresAt: this.expiry(),
          })
          .where(eq(conversations.id, id));
        return objectOf(row);
      }),
    );
  }

  async turnItems(orgId: string, id: string): Promise<Json[] | null> {
    if (conversationIdKind(id, 'conversation') !== 'ours') return null;
    const { maxItems, maxBytes } = this.settings;
    return this.bounded(async () => {
      const [row] = await this.db.select().from(conversations).where(live(orgId, id));
      if (!row) return null;
      if (row.items >= maxItems)
        throw refusal(`This conversation has ${row.items} items`, `TOLLGATE_CONVERSATIONS_MAX_ITEMS=${maxItems}`);
      if (row.bytes >= maxBytes)
        throw refusal(`This conversation has ${row.bytes} bytes`, `TOLLGATE_CONVERSATIONS_MAX_BYTES=${maxBytes}`);
      const rows = await this.db
        .select({ item: conversationItems.item })
        .from(conversationItems)
        .where(eq(conversationItems.conversationId, id))
        .orderBy(conversationItems.position);
      return rows.map((item) => JSON.parse(item.item) as Json);
    });
  }

  async appendTurn(orgId: string, id: string, items: Json[]): Promise<boolean> {
    if (conversationIdKind(id, 'conversation') !== 'ours') return false;
    if (items.length === 0) return true;
    return this.bounded(() => this.db.transaction((tx) => this.append(tx, orgId, id, items, false)));
  }

  async purgeExpired(now: Date): Promise<number> {
    let purged = 0;
    for (;;) {
      const deleted = await this.bounded(() =>
        this.db.transaction(async (tx) => {
          const due = await tx
            .select({ id: conversations.id })
            .from(conversations)
            .where(sql`${conversations.expiresAt} <= ${now.toISOString()}::timestamptz`)
            .limit(PURGE_BATCH);
          if (due.length === 0) return 0;
          const rows = await tx
            .delete(conversations)
            .where(
              inArray(
                conversations.id,
                due.map((row) => row.id),
              ),
            )
            .returning({ orgId: conversations.orgId });
          await uncount(tx, rows);
          return rows.length;
        }),
      );
      purged += deleted;
      if (deleted === 0) return purged;
    }
  }

  /**
   * Appends `items` in one `update` (its row lock orders appends from every replica) and one
   * insert; false when the conversation is not there for `orgId`. `bounded`: refused past
   * TOLLGATE_CONVERSATIONS_MAX_ITEMS or _MAX_BYTES.
   */
  private async append(tx: Transaction, orgId: string, id: string, items: Json[], bounded: boolean) {
    const texts = items.map((item) => JSON.stringify(item));
    const bytes = texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0);
    const n = items.length;
    const { maxItems, maxBytes } = this.settings;
    const within = bounded
      ? sql` and ${conversations.items} + ${n} <= ${maxItems} and ${conversations.bytes} + ${bytes} <= ${maxBytes}`
      : sql``;
    const moved = await tx.execute(sql`
      update ${conversations}
         set next_position = next_position + ${n}, items = items + ${n}, bytes = bytes + ${bytes},
             expires_at = ${this.expiry().toISOString()}::timestamptz
       where id = ${id} and org_id = ${orgId} and expires_at > now()${within}
      returning next_position - ${n} as start`);
    const [row] = rowsOf<{ start: number | string }>(moved);
    if (!row) {
      const [found] = await tx.select().from(conversations).where(live(orgId, id));
      if (!found) return false;
      if (found.items + n > maxItems)
        throw refusal(
          `This conversation would have ${found.items + n} items`,
          `TOLLGATE_CONVERSATIONS_MAX_ITEMS=${maxItems}`,
        );
      throw refusal(
        `This conversation's items would be ${found.bytes + bytes} bytes`,
        `TOLLGATE_CONVERSATIONS_MAX_BYTES=${maxBytes}`,
      );
    }
    const start = Number(row.start);
    await tx.insert(conversationItems).values(
      items.map((item, index) => ({
        conversationId: id,
        position: start + index,
        itemId: item.id as string,
        item: texts[index]!,
        bytes: Buffer.byteLength(texts[index]!),
      })),
    );
    return true;
  }

  private expiry(): Date {
    return new Date(Date.now() + this.settings.retentionDays * 86_400_000);
  }

  /**
   * `work` within the store's timeout; a failure of the database (or no answer) as a 503 the client
   * can retry.
   */
  private bounded<T>(work: () => Promise<T>): Promise<T> {
    return withinStoreOr503(
      work(),
      'responses_unavailable',
      'The gateway cannot read or write conversations right now.',
      this.timeoutMs,
    );
  }
}
