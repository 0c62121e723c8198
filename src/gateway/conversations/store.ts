/**
 * Conversations, as OpenAI's `/v1/conversations` defines them: a list of items
 * and metadata, kept in the gateway's database so every replica reads and
 * appends to the same conversation. `POST /v1/responses` with `conversation`
 * starts a turn's input with the conversation's items and appends the turn's
 * input and output after it (`requests/responses/conversation.ts`).
 *
 * Every read names the organization: another organization's id, like an
 * unknown, deleted or expired one, is `null` (the routes answer 404). An id the
 * gateway cannot have made is `null` without a database call; one holding a
 * character no id has is a 400 (`ids.ts`). Every method answers within the
 * store's timeout: a database that fails or does not answer is a 503.
 */

type Json = Record<string, unknown>;

/** A conversation as OpenAI's `ConversationResource` has it. */
export interface ConversationObject {
  id: string;
  object: 'conversation';
  created_at: number;
  metadata: Record<string, string>;
}

/** A page of a conversation's items, as OpenAI's `ConversationItemList` pages them. */
export interface ConversationItemsQuery {
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

export interface ConversationItemsPage {
  data: Json[];
  firstId: string | null;
  lastId: string | null;
  hasMore: boolean;
}

export interface ConversationStore {
  /**
   * A new conversation with its first items (already in the form `items.ts` keeps); a 400 naming
   * the setting past TOLLGATE_CONVERSATIONS_ORG_MAX, _MAX_ITEMS or _MAX_BYTES.
   */
  create(orgId: string, metadata: Record<string, string>, items: Json[]): Promise<ConversationObject>;
  get(orgId: string, id: string): Promise<ConversationObject | null>;
  /** Replaces its metadata (OpenAI's update replaces, it does not merge). */
  update(orgId: string, id: string, metadata: Record<string, string>): Promise<ConversationObject | null>;
  /** Deletes it and its items; false when `get` would have said null. */
  delete(orgId: string, id: string): Promise<boolean>;
  /**
   * Appends items at its end, refused (a 400 naming the setting) past its bounds; the items as
   * stored.
   */
  addItems(orgId: string, id: string, items: Json[]): Promise<Json[] | null>;
  listItems(orgId: string, id: string, query: ConversationItemsQuery): Promise<ConversationItemsPage | null>;
  /** The item with this id (the latest, if the client sent the id twice); null for no such item too. */
  getItem(orgId: string, id: string, itemId: string): Promise<Json | null>;
  /** Deletes every item with this id; the conversation after it, or null when there was none. */
  deleteItem(orgId: string, id: string, itemId: string): Promise<ConversationObject | null>;
  /**
   * Every item, oldest first, for a turn of `POST /v1/responses`: refused (a 400 naming the
   * setting) when the conversation is already at a bound, so a turn never starts that could not be
   * appended.
   */
  turnItems(orgId: string, id: string): Promise<Json[] | null>;
  /**
   * Appends a finished turn's items. Not bounded: the turn was admitted by `turnItems` and its
   * tokens are billed, so it is kept whole (a conversation may pass its bounds by one turn; the
   * next turn is refused). False when the conversation has gone meanwhile.
   */
  appendTurn(orgId: string, id: string, items: Json[]): Promise<boolean>;
  /** Deletes what is past the retention; the number of conversations deleted. */
  purgeExpired(now: Date): Promise<number>;
}
